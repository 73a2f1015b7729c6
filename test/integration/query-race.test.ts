import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { Client } from '@temporalio/client';
import { connectClient } from '../../src/client/connect';
import { isQueryRace } from '../../src/client/busy-retry';
import { installQuietRuntime } from '../../src/worker/runtime';
import { uniqueName } from '../support/harness';
import { firstTaskDone, probeBundle, replayError, sleep, TAIL_BY_LENGTH_GUARD } from '../support/probe';
import { decision, finish, pingBy, type queryProbe } from '../support/fixtures/merge-probe-workflow';

// A query that races a new event (workflows/stale-cache-guard.ts, QUERY_TAIL). The server
// sends a query straight to a worker when the run has no workflow task pending; if a
// signal comes before a worker takes the query, the history the worker gets ends with
// it, and sdk-core hands it to the workflow at the time of the last task, before the
// query. The probe workflow decides by the time it handles the ping: live it decides
// "no timer" there; a replay handles the ping with the next task, after the deadline, and
// decides "timer". Which of the query and the next task a worker takes first is up to the
// server, so each test repeats the scenario until the race happened.

let client: Client;
let connection: NativeConnection;
const ATTEMPTS = 20;

beforeAll(async () => {
  installQuietRuntime();
  client = await connectClient({ address: inject('temporalAddress'), namespace: 'default' });
  connection = await NativeConnection.connect({ address: inject('temporalAddress') });
});
afterAll(async () => {
  await connection?.close();
  await client?.connection.close();
});

/** One run: a worker that caches nothing ends the first task and stops; a query, then a ping, are sent with no worker; a caching worker starts. */
async function race(bundle: { code: string }) {
  const taskQueue = uniqueName('tq-query-race');
  const w1 = await Worker.create({ connection, taskQueue, workflowBundle: bundle, maxCachedWorkflows: 0 });
  const r1 = w1.run();
  const handle = await client.workflow.start<typeof queryProbe>('queryProbe', { taskQueue, workflowId: uniqueName('query-race') });
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
  const w2 = await Worker.create({ connection, taskQueue, workflowBundle: bundle });
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
    // or it failed otherwise; the ping was then handled by a task, as a replay handles it.
    if (r.answer !== 'no timer') {
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

/** The guarded runs: the raced query fails, never answers 'no timer', and the run replays. */
async function guardedRace(guard: true | string) {
  const bundle = await probeBundle(guard);
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
}

test('guarded (the table workflow\'s interceptor): the raced query fails, the copy is dropped, the run decides at its next task and replays', () => guardedRace(true), 240_000);

// The tail here comes at the last task's time, so the time rule catches it first in the
// table workflow's guard; the length rule, which also catches tails at a later time (a
// failed task's, CI of session 29), must catch it on its own on a real server, where
// sdk-core gives the history lengths it checks.
test('the length rule alone: the raced query fails the same way', () => guardedRace(TAIL_BY_LENGTH_GUARD), 240_000);
