import { expect, test } from 'vitest';
import { Worker } from '@temporalio/worker';
import { isQueryRace } from '../../src/client/busy-retry';
import { useServerClients } from '../support/server-clients';
import { uniqueName } from '../support/harness';
import { firstTaskDone, probeBundle, replayError } from '../support/probe';
import { sleep } from '../../src/util/sleep';
import { decision, finish, pingBy, type queryProbe } from '../support/fixtures/merge-probe-workflow';

// A query that races a new event (workflows/stale-cache-guard.ts, QUERY_TAIL). The server
// sends a query straight to a worker when the run has no workflow task pending; if a
// signal comes before a worker takes the query, the history the worker gets ends with
// it, and sdk-core hands it to the workflow at the time of the last task, before the
// query. The probe workflow decides by the time it handles the ping: live it decides
// "no timer" there; a replay handles the ping with the next task, after the deadline, and
// decides "timer". Which of the query and the next task a worker takes first is up to the
// server, so each test repeats the scenario until the race happened.

const server = useServerClients();
// The race needs the query's copy to handle the ping within a few ms of the deadline;
// on a loaded machine 20 tries once found none (each try takes ~2.5 s).
const ATTEMPTS = 40;

/** One run: a worker that caches nothing ends the first task and stops; a query, then a ping, are sent with no worker; a caching worker starts. */
async function race(bundle: { code: string }) {
  const taskQueue = uniqueName('tq-query-race');
  const w1 = await Worker.create({ connection: server.connection, taskQueue, workflowBundle: bundle, maxCachedWorkflows: 0 });
  const r1 = w1.run();
  const handle = await server.client.workflow.start<typeof queryProbe>('queryProbe', { taskQueue, workflowId: uniqueName('query-race') });
  await firstTaskDone(handle);
  w1.shutdown();
  await r1;
  // No task pending: the server sends the query straight to the task queue, where it waits.
  const query = handle.query(decision).then(
    (answer) => ({ answer, error: null as unknown }),
    (error: unknown) => ({ answer: null, error }),
  );
  await sleep(500);
  await handle.signal(pingBy, Date.now());
  await sleep(500);
  const w2 = await Worker.create({ connection: server.connection, taskQueue, workflowBundle: bundle });
  const r2 = w2.run();
  const q = await query;
  await handle.signal(finish);
  const result = await handle.result();
  w2.shutdown();
  await r2;
  return { ...q, result, replayError: await replayError(bundle, handle) };
}

test('unguarded: a query that takes the new ping decides at the last task\'s time, and the run\'s history no longer replays', async () => {
  const bundle = await probeBundle(false);
  for (let i = 0; i < ATTEMPTS; i++) {
    const r = await race(bundle);
    // No race: the next task handled the ping (after the deadline) and the query saw that
    // ('timer'), or the query was answered before the ping reached the history ('none'),
    // or it failed otherwise, or the next task took the ping within the deadline too and
    // decided as the query did; the ping was then handled by a task, as a replay handles it.
    if (r.answer !== 'no timer' || r.replayError === null) {
      expect(r.replayError, JSON.stringify({ ...r, error: String(r.error) })).toBeNull();
      continue;
    }
    // The race: the query's copy handled the ping before its deadline, and the next task sent what it decided.
    expect(r.result).toBe('no timer');
    expect(r.replayError).toMatch(/Nondeterminism|TMPRL1100/);
    return;
  }
  throw new Error(`no race in ${ATTEMPTS} runs`);
}, 240_000);

test('guarded (the table workflow\'s interceptor): the raced query fails, the copy is dropped, the run decides at its next task and replays', async () => {
  const bundle = await probeBundle(true);
  for (let i = 0; i < ATTEMPTS; i++) {
    const r = await race(bundle);
    expect(r.result).toBe('timer');
    expect(r.replayError).toBeNull();
    if (r.error === null) {
      // Answered after the task handled the ping, or before the ping reached the history;
      // never from a copy that handled it early ('no timer').
      expect(['timer', 'none']).toContain(r.answer);
      continue;
    }
    // The race: the query is refused with the guard's reason, which clients ask again on.
    expect(isQueryRace(r.error)).toBe(true);
    return;
  }
  throw new Error(`no race in ${ATTEMPTS} runs`);
}, 240_000);

// The other side of the guard: what it must not refuse. A query the server sends to the
// worker's sticky queue comes with no history at all (matching's getHistoryForQueryTask),
// so it follows the copy's last live task with nothing in between: exactly the shape of a
// tail (a live activation of events, then a query task, the history no longer). A rule
// by history length for tails at a later time refuses this query: under one, 937 of 1,000
// tables in a many-tables start failed one and were evicted.
test('a query on the sticky queue right after a live task of a signal is answered, by the copy that ran it', async () => {
  const bundle = await probeBundle(true);
  const taskQueue = uniqueName('tq-sticky-query');
  const worker = await Worker.create({ connection: server.connection, taskQueue, workflowBundle: bundle });
  await worker.runUntil(async () => {
    const handle = await server.client.workflow.start<typeof queryProbe>('queryProbe', { taskQueue, workflowId: uniqueName('sticky-query') });
    await firstTaskDone(handle);
    for (let i = 0; i < 3; i++) {
      const before = (await handle.describe()).historyLength;
      // A deadline already past: the task that handles the ping decides 'timer'.
      await handle.signal(pingBy, 0);
      for (;;) {
        const d = await handle.describe();
        if (d.raw.pendingWorkflowTask == null && d.historyLength > before + 2) break;
        await sleep(20);
      }
      expect(await handle.query(decision)).toBe('timer');
    }
    await handle.signal(finish);
    expect(await handle.result()).toBe('timer');
    // Answered by the copy that ran the tasks: no workflow task failed, none was replayed elsewhere.
    const history = await handle.fetchHistory();
    expect(history.events!.filter((e) => e.workflowTaskFailedEventAttributes != null)).toEqual([]);
    expect(await replayError(bundle, handle, history)).toBeNull();
  });
}, 60_000);

