import { spawn } from 'node:child_process';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import { createTableMeta } from '../../src/storage/generation-store';
import { TableWriter, workflowArgsFor } from '../../src/client/table-writer';
import { shardNames } from '../../src/messages/names';
import { eventually, startHarness, STORAGES, uniqueName, type Harness, type StorageKind } from '../support/harness';
import { expectMergedExactly } from '../support/expect-exact';
import { Load } from '../support/load';
import { activityRuns, type ActivityRun } from '../support/history';
import { recordHistory } from '../support/record-history';

// docs/design.md invariant 10: killing a worker loses nothing. A real `turnstile worker` process
// shares the task queue with the harness's worker and is SIGKILLed (no shutdown, no
// cancellation, no last heartbeat) while it runs one of the table's activities. The
// activity is found stalled by its heartbeat timeout and runs again on the survivor;
// the killed worker's sticky workflow tasks move over too; the table ends exact.

// On both storage backends: on S3 the killed worker's half-done writes are objects
// that were never created (a PUT is all or nothing).

const PendingActivityState = temporal.api.enums.v1.PendingActivityState;

let h: Harness;

interface Victim {
  activityId: string;
  type: string;
  worker: string;
}

/** Starts a `turnstile worker` process on the harness's queue, waits for one of the table's activities to run on it, and SIGKILLs it there. */
async function killWorkerMidActivity(h: Harness, handle: WorkflowHandle): Promise<Victim> {
  const env = { ...process.env, TEMPORAL_ADDRESS: h.address, TURNSTILE_DATA: h.dataRoot, TURNSTILE_TASK_QUEUE: h.taskQueue };
  // Its own process group, and the whole group is what gets SIGKILLed: whatever
  // processes the command runs as (today one: turnstile.mjs runs dist/cli.js itself).
  const child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'scripts', 'turnstile.mjs'), 'worker'], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const exited = new Promise<NodeJS.Signals | null>((r) => child.on('exit', (_code, signal) => r(signal)));
  const killGroup = (): void => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  try {
    await eventually(async () => out.includes('worker on'), 'the second worker up');
    const mine = `${process.pid}@`;
    const victim = await eventually(async () => {
      const d = await handle.describe();
      const a = (d.raw.pendingActivities ?? []).find(
        (p) =>
          p.lastWorkerIdentity &&
          !p.lastWorkerIdentity.startsWith(mine) &&
          p.state === PendingActivityState.PENDING_ACTIVITY_STATE_STARTED &&
          // A unit's activity (a snapshot has no heartbeat and would only time out later).
          ['prepareMerge', 'commitMerge'].includes(p.activityType?.name ?? ''),
      );
      return a ? { activityId: a.activityId!, type: a.activityType?.name ?? '?', worker: a.lastWorkerIdentity! } : null;
    }, 'an activity running on the other worker', 60_000, 10);
    killGroup();
    expect(await exited).toBe('SIGKILL');
    return victim;
  } finally {
    killGroup();
  }
}

/** Whether the killed attempt really was cut short: another worker finished it, or it timed out. */
function interrupted(run: ActivityRun, victim: Victim): boolean {
  return run.outcome === 'timedOut' || (run.startedBy !== null && run.startedBy !== victim.worker);
}

describe.each(STORAGES)('on %s storage', (storage: StorageKind) => {
beforeAll(async () => {
  h = await startHarness({ name: 'crash', storage });
});
afterAll(async () => h?.close());

test('a worker SIGKILLed while running an activity loses nothing', async () => {
  const table = uniqueName('crash');
  const meta = await createTableMeta(h.dataRoot, { name: table, key: 'id', shards: shardNames(2), indices: [] });
  // One run: the victim's attempt is looked up in the run's history, and a continue-as-new
  // (at 500 events, reachable under this load) while it is pending leaves it unclosed
  // there, its unit scheduled again in the next run under another range.
  await h.tables.start({ ...workflowArgsFor(meta), policy: { periodSecs: { optimize: 0, index: 0, gc: 0 }, stallSecs: { read: 3, encode: 3, commit: 3 } }, continueAsNewAtEvents: 100_000 });
  const handle = h.tables.handle(table);
  const writer = await TableWriter.open(h.tables, h.dataRoot, table);
  // Large generations keep each activity running long enough to be caught inside it.
  const load = new Load(writer, { rowsPerGeneration: 5000, keySpan: 40_000, pauseMs: 50 });
  load.start();

  // The kill can race the activity's own completion; kill again until one attempt was
  // verifiably cut short (at most 4 workers).
  const kills: string[] = [];
  let cut: Victim | null = null;
  for (let i = 0; i < 4 && !cut; i++) {
    const victim = await killWorkerMidActivity(h, handle);
    const run = await eventually(async () => {
      const r = (await activityRuns(handle)).filter((x) => x.activityId === victim.activityId).at(-1);
      return r?.closedEventId ? r : null;
    }, `${victim.activityId} closed after the kill`, 90_000, 250);
    kills.push(`${victim.type} (${victim.activityId}): ${run.outcome}, closed by ${run.startedBy ?? 'nobody'}`);
    if (interrupted(run, victim)) cut = victim;
  }
  console.log(`killed workers mid-activity: ${kills.join('; ')}`);
  expect(cut, kills.join('; ')).not.toBeNull();

  await load.stop();
  await expectMergedExactly(h, table, load, meta.shards);
  if (storage === 'fs') await recordHistory(h.client, handle, 'worker-killed');
}, 300_000);
});
