import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createTableMeta } from '../../src/storage/generation-store';
import { readGcFloor } from '../../src/storage/gc-floor';
import { tableFiles } from '../../src/storage/table-files';
import { TableWriter, workflowArgsFor } from '../../src/client/table-writer';
import { shardNames } from '../../src/messages/names';
import { eventually, startHarness, uniqueName, type Harness } from '../support/harness';
import { expectMergedExactly } from '../support/expect-exact';
import { Load } from '../support/load';
import { turnstile } from '../support/adopted-run';

// The way out for a table run whose workflow task fails on every attempt (a history
// that no longer replays, a bug in a release): reset it to its first workflow task
// (docs/operations.md, "A table's workflow task keeps failing"). The new run starts from
// the same input, the state the run before handed on, and hears again every signal the
// old run got since; what the old run merged meanwhile is merged again (the upsert keeps
// the row of higher seq) or skipped where gc already deleted its generations (GC.json).
// Here the reset comes while writers seal and after gc deleted generations; the table
// must end exact and go on merging.

const EventType = temporal.api.enums.v1.EventType;

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ name: 'reset' });
});
afterAll(async () => h?.close());

test('a table run reset to its first workflow task while writers seal loses nothing and merges on', async () => {
  const table = uniqueName('reset');
  const meta = await createTableMeta(h.dataRoot, { name: table, key: 'id', shards: shardNames(2), indices: [] });
  await h.tables.start({ ...workflowArgsFor(meta), policy: { periodSecs: { optimize: 0, index: 0, gc: 1 } }, continueAsNewAtEvents: 100_000 });
  const handle = h.tables.handle(table);
  const writer = await TableWriter.open(h.tables, h.dataRoot, table);
  const load = new Load(writer, { rowsPerGeneration: 300, keySpan: 3_000, pauseMs: 40 });
  load.start();

  // Before the reset: generations merged, and some of them deleted by gc.
  const files = tableFiles(h.dataRoot, table);
  await eventually(async () => ((await readGcFloor(files, 's0')) > 0 && (await readGcFloor(files, 's1')) > 0) || null, 'gc deleted merged generations of both shards', 90_000, 200);
  const floors = [await readGcFloor(files, 's0'), await readGcFloor(files, 's1')];
  const before = await handle.describe();
  const mergedBefore = (await h.tables.state(table)).shards.map((x) => x.mergedThroughSeq);
  const out = await turnstile(h, 'table', 'reset', table, '--reason', 'test: the way out of a run whose workflow task keeps failing');
  const reset = { runId: /-> (\S+),/.exec(out)?.[1] ?? '' };
  expect(out).toContain(`reset table ${table}: run ${before.runId} -> `);
  expect(reset.runId).not.toBe(before.runId);
  // Without a reason, or for a table without a workflow: refused, nothing reset.
  await expect(turnstile(h, 'table', 'reset', table)).rejects.toThrow(/--reason/);
  await expect(turnstile(h, 'table', 'reset', uniqueName('none'), '--reason', 'x')).rejects.toThrow(/no workflow/);

  // The reset run merges what the writers go on sealing.
  await eventually(async () => load.sealedThrough('s0') > 0 && (await handle.describe()).runId === reset.runId || null, 'the reset run is the current one');
  const sealedAtReset = Object.fromEntries(meta.shards.map((s) => [s, load.sealedThrough(s)]));
  await eventually(async () => meta.shards.every((s) => load.sealedThrough(s) > sealedAtReset[s]! + 3) || null, 'writers sealed more after the reset', 60_000, 100);
  await load.stop();
  await expectMergedExactly(h, table, load, meta.shards);

  // The old run ended as reset; the new one still runs, and its history holds no failed workflow task.
  const old = await h.client.workflow.getHandle(handle.workflowId, before.runId).describe();
  expect(old.status.name).toBe('TERMINATED');
  const now = await handle.describe();
  expect(now.runId).toBe(reset.runId);
  expect(now.status.name).toBe('RUNNING');
  const events = (await handle.fetchHistory()).events!;
  // The new run started from the old run's input: its first unit of each shard starts at
  // the first seq. That unit is a preparation, or a commit when it merges directly; a
  // preparation whose seqs gc had all deleted by then has nothing to commit.
  const units = events.map((e) => e.activityTaskScheduledEventAttributes).filter((a) => a?.activityType?.name === 'prepareMerge' || a?.activityType?.name === 'commitMerge').map((a) => a!.activityId ?? '');
  console.log(`reset: gc floors ${floors.join(', ')}, merged through ${mergedBefore.join(', ')} at the reset; the new run's merge activities ${units.length}: ${units.slice(0, 6).join(', ')}`);
  for (const shard of meta.shards) expect(units.find((c) => new RegExp(`^(prepare|commit) merge/${shard}[ @]`).test(c)), units.join(', ')).toMatch(new RegExp(`^(prepare|commit) merge/${shard} 1-`));
  const failed = events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED);
  // The reset itself is recorded as one failed workflow task (cause RESET_WORKFLOW); no other.
  expect(failed.map((e) => e.workflowTaskFailedEventAttributes?.cause)).toEqual([temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW]);
}, 240_000);
