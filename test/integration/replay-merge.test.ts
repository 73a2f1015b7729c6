import { afterAll, beforeAll, expect, test } from 'vitest';
import { inject } from 'vitest';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { connectClient } from '../../src/client/connect';
import { installQuietRuntime } from '../../src/worker/runtime';
import { uniqueName } from '../support/harness';
import { tasksMergedOnReplay } from '../support/replay-merges';
import { firstTaskDone, probeBundle, replayError } from '../support/probe';
import { sleep } from '../../src/util/sleep';
import { finish, ping, poke, type mergeProbe } from '../support/fixtures/merge-probe-workflow';

// The table workflow decides once per activation (workflows/activation.ts), so it relies on a
// replay splitting a history into the activations the live run had. One case where sdk-core
// merges two tasks on replay (a task with no command, after a stretch with none, followed at
// once by the next task's scheduling: its "workflow task heartbeat" rule) is what an update
// arriving while a task runs looks like; sdk-core keeps those apart by the update's
// sequencing event (history_update.rs). A merge there would make a replay decide
// differently; this checks, against the real server, that the update's case replays as it
// ran, and that the scan of test/support/replay-merges.ts agrees.

let client: Client;
let connection: NativeConnection;
let bundle: { code: string };
const taskQueue = uniqueName('tq-replay-merge');
let worker: Worker;
let running: Promise<void>;

beforeAll(async () => {
  installQuietRuntime();
  client = await connectClient({ address: inject('temporalAddress'), namespace: 'default' });
  connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  bundle = await probeBundle(true);
  // The ping's task spins for about half a second: well under the SDK's 5 s limit on one activation.
  worker = await Worker.create({ connection, taskQueue, workflowBundle: bundle });
  running = worker.run();
}, 120_000);

afterAll(async () => {
  worker?.shutdown();
  await running;
  await connection?.close();
  await client?.connection.close();
});

/** One probe run: a ping whose task runs long, an update sent while it runs, then finish. */
async function probe() {
  const handle = await client.workflow.start<typeof mergeProbe>('mergeProbe', { taskQueue, workflowId: uniqueName('probe'), args: [{ spinIterations: 60_000_000 }], workflowTaskTimeout: '60 s' });
  await firstTaskDone(handle);
  await handle.signal(ping);
  // The update goes once the ping's task has started (the spin keeps it running for a while).
  for (;;) {
    const d = await handle.describe();
    if (d.raw.pendingWorkflowTask?.startedTime != null) break;
    await sleep(5);
  }
  expect(await handle.executeUpdate(poke)).toBe('ok');
  await handle.signal(finish);
  const result = await handle.result();
  const history = await handle.fetchHistory();
  const replayed = await replayError(bundle, handle, history);
  // The ping's task: completed with no command and followed at once by the next task.
  const ev = history.events ?? [];
  const E = temporal.api.enums.v1.EventType;
  const quietThenScheduled = ev.some((e, i) => e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED && ev[i - 3]?.eventType === E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED && ev[i + 1]?.eventType === E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED);
  return { result, merged: tasksMergedOnReplay(history), replayError: replayed, quietThenScheduled };
}

test('a task with no command, followed at once by the task of an update that came while it ran, replays as its own activation', async () => {
  const r = await probe();
  // Live: the ping's activation had no update, so no timer.
  expect(r.result).toBe('no timer');
  // The shape sdk-core's heartbeat rule looks at is there (no command in the ping's task or
  // before it, the next task scheduled right after it) ...
  expect(r.quietThenScheduled).toBe(true);
  // ... and the update's sequencing keeps the tasks apart: nothing merged, the run replays.
  expect(r.merged).toEqual([]);
  expect(r.replayError).toBeNull();
}, 120_000);
