import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, NativeConnection, Worker, type InjectedSinks } from '@temporalio/worker';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import { QUIET_BUNDLER_LOGGER } from '../../src/worker/create-worker';
import { installQuietRuntime } from '../../src/worker/runtime';
import { sleep } from '../../src/util/sleep';
import { uniqueName } from '../support/harness';
import type { ActivationRecord, ProbeSinks } from './fixtures/activation-probe';

// The SDK behaviour workflows/stale-cache-guard.ts works around (QUERY_TAIL), shown on a
// workflow of a few lines without the guard. A query sent to the shared task queue comes
// with the run's history as read when a worker takes it; events that arrived since the
// last workflow task (signals) ride along, and sdk-core hands them to the workflow in an
// activation of their own, live, at the time of that last task, before the query. A
// replay of the same history delivers them with the next workflow task, at its time. A
// workflow that decides once per activation (the table: workflows/activation.ts) then
// decides live what its history cannot repeat.
//
// Two workers, the run's sticky queue reset every 2 ms so its tasks and queries land on
// either, a signal every 60 ms and a query every 3 ms: a few such tails a run of 30 s
// (up to MAX_RUN_MS while none came).
// When this finds none, check whether sdk-core stopped delivering them: then the guard's
// QUERY_TAIL rule can go.

const FIXTURE = path.join(__dirname, 'fixtures', 'activation-probe.ts');
const RUN_MS = 30_000;
/** Beside the heaviest suites fewer queries and resets go through: a run of 30 s once had no tail, so it goes on up to this long until one came. */
const MAX_RUN_MS = 90_000;

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  installQuietRuntime();
  env = await TestWorkflowEnvironment.createFromExistingServer({ address: inject('temporalAddress') });
});
afterAll(async () => env?.teardown());

type Rec = ActivationRecord & { worker: string };

const sinks = (worker: string, out: Rec[]): InjectedSinks<ProbeSinks> => ({
  probe: { activation: { fn: (_info, r) => void out.push({ ...r, worker }), callDuringReplay: true } },
});

const isEvent = (job: string): boolean => job.startsWith('poke:');

/** Per copy of the run on a worker (a copy starts with initializeWorkflow), a live activation of signals at the time of the copy's last activation. */
function liveTails(recs: Rec[]): Rec[] {
  const tails: Rec[] = [];
  for (const worker of ['A', 'B']) {
    let last = '';
    for (const r of recs.filter((x) => x.worker === worker)) {
      if (r.jobs.includes('initializeWorkflow')) last = '';
      if (r.jobs.every((j) => j === 'queryWorkflow')) continue;
      if (!r.isReplaying && r.at <= last && r.jobs.some(isEvent)) tails.push(r);
      last = r.at;
    }
  }
  return tails;
}

test('sdk-core hands signals that came with a query to the workflow live, at the last workflow task\'s time, not with the next task', async () => {
  const bundle = await bundleWorkflowCode({ workflowsPath: FIXTURE, workflowInterceptorModules: [FIXTURE], logger: QUIET_BUNDLER_LOGGER });
  const taskQueue = uniqueName('tq-tail');
  const workflowId = uniqueName('tail');
  const recs: Rec[] = [];
  // One connection each: the SDK refuses two workers of one task queue on one connection.
  const connections = await Promise.all(['A', 'B'].map(() => NativeConnection.connect({ address: inject('temporalAddress') })));
  const workers = await Promise.all(
    ['A', 'B'].map((identity, i) => Worker.create({ connection: connections[i]!, taskQueue, identity, workflowBundle: bundle, sinks: sinks(identity, recs) })),
  );
  const handle = await env.client.workflow.start('takePokes', { taskQueue, workflowId });
  const drive = async () => {
    const start = Date.now();
    // Looked for once a second after RUN_MS (the three loops ask every few ms).
    let found = false;
    let lookedAt = 0;
    const going = () => {
      const now = Date.now();
      if (now < start + RUN_MS) return true;
      if (!found && now - lookedAt >= 1000) {
        lookedAt = now;
        found = liveTails(recs).length > 0;
      }
      return !found && now < start + MAX_RUN_MS;
    };
    let n = 0;
    const loop = async (everyMs: number, fn: () => Promise<unknown>) => {
      while (going()) {
        await fn().catch(() => undefined);
        await sleep(everyMs);
      }
    };
    await Promise.all([
      loop(60, () => handle.signal('poke', ++n)),
      loop(3, () => handle.query('pokes')),
      loop(2, () => env.client.workflowService.resetStickyTaskQueue({ namespace: 'default', execution: { workflowId } })),
    ]);
    await handle.terminate('done');
  };
  const driving = drive();
  await Promise.all(workers.map((w) => w.runUntil(driving)));
  await Promise.all(connections.map((c) => c.close()));

  // What a replay from history hands the workflow at each workflow time.
  const history = await handle.fetchHistory();
  const replayed: Rec[] = [];
  await Worker.runReplayHistory({ workflowBundle: bundle, sinks: sinks('replay', replayed) }, history, workflowId);
  const fromHistory = new Map(replayed.filter((r) => r.jobs.some(isEvent)).map((r) => [r.at, r.jobs.join(',')]));

  const tails = liveTails(recs).map((r) => ({ worker: r.worker, at: r.at, live: r.jobs.join(','), replay: fromHistory.get(r.at) ?? '' }));
  console.log(`[query tail] ${recs.length} activations on two workers, ${tails.length} query tails:\n${tails.map((t) => `${t.worker} at ${t.at}: [${t.live}] live, [${t.replay}] in the replay`).join('\n')}`);
  expect(tails.length).toBeGreaterThan(0);
  // A replay does not hand the workflow those signals at that time: they come with a later task.
  for (const t of tails) expect(t.replay).not.toBe(t.live);
}, 180_000);
