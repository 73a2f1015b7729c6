import fs from 'node:fs';
import * as lancedb from '@lancedb/lancedb';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createTableMeta } from '../../src/storage/generation-store';
import { generationFile, tableLayout } from '../../src/storage/layout';
import { lanceConnectOptions } from '../../src/storage/lance-table';
import { storageAt } from '../../src/storage/open-storage';
import { TableWriter, workflowArgsFor } from '../../src/client/table-writer';
import { MergeWaiter } from '../../src/client/merge-waiter';
import type { PolicyOverride } from '../../src/config/policy-schema';
import { shardNames } from '../../src/messages/names';
import { shardOfKey } from '../../src/storage/routing';
import type { FreezePoint } from '../../activities';
import { eventually, startHarness, STORAGES, uniqueName, type Harness } from '../support/harness';
import { readTableRows } from '../support/lance-read';
import { Load } from '../support/load';
import { activityRuns } from '../support/history';
import { recordHistory } from '../support/record-history';
import { expectMergedExactly } from '../support/expect-exact';
import { generateRows } from '../../src/writer';
import { KEY_INDEX_AT_ROWS } from '../../src/storage/merge-join';

// Real maintenance on real Lance tables through the real server: exact content at
// scale, stalls detected from progress (not liveness), corrupt generations held.

// The server fires heartbeat timeouts from its timer queue, a little after they are
// due (observed: up to 0.1 s on this machine); the bounds below allow 0.5 s for that.
const TIMER_DISPATCH_SECS = 0.5;
const QUIET: PolicyOverride = { periodSecs: { optimize: 0, index: 0, gc: 0 } };
const harnesses: Harness[] = [];
let h: Harness;

beforeAll(async () => {
  h = await startHarness({ name: 'maint' });
  harnesses.push(h);
});
afterAll(async () => {
  for (const x of harnesses) await x.close();
});

async function newTable(hh: Harness, prefix: string, shards: number, policy: PolicyOverride) {
  const table = uniqueName(prefix);
  const meta = await createTableMeta(hh.dataRoot, { name: table, key: 'id', shards: shardNames(shards), indices: [] });
  await hh.tables.start({ ...workflowArgsFor(meta), policy });
  return { table, meta, writer: await TableWriter.open(hh.tables, hh.dataRoot, table), handle: hh.tables.handle(table) };
}

const expectExact = expectMergedExactly;

test('4 shards, 52 generations, 104k rows: the table equals newest-seq-wins row for row', async () => {
  const { table, meta } = await newTable(h, 'big', 4, QUIET);
  const writer = await TableWriter.open(h.tables, h.dataRoot, table);
  const load = new Load(writer, { rowsPerGeneration: 2000, keySpan: 24_000, pauseMs: 0 });
  for (let g = 0; g < 13; g++) await Promise.all(meta.shards.map((s) => load.writeOne(s)));
  const written = [...load.written.values()].flat();
  expect(written.length).toBe(52);
  expect(written.reduce((n, g) => n + g.rows.length, 0)).toBe(104_000);
  await expectExact(h, table, load, meta.shards);
  const status = await h.tables.status(table);
  expect(status.backlog).toBe(0);
  expect(status.counters.rowsMerged).toBeGreaterThan(0);
  // Task queue priorities (workflows/run-unit.ts): a merge's commit first, its
  // preparation next, scans (and plans) at the default.
  const priorities: Record<string, number[]> = {};
  for (const r of await activityRuns(h.tables.handle(table))) priorities[r.type] = [...new Set([...(priorities[r.type] ?? []), r.priorityKey])];
  expect(priorities).toMatchObject({ prepareMerge: [2], commitMerge: [1], snapshot: [0] });
}, 300_000);

/**
 * Freezes the first matching progress point of attempt 1, re-sending the same progress
 * (a live process that makes no progress) until cancelled; records when attempt 2 starts.
 */
function freezeFirst(match: (p: FreezePoint) => boolean) {
  const state = { frozenAtMs: 0, retriedAtMs: 0 };
  const hook = (p: FreezePoint): Promise<void> | void => {
    if (!match(p)) return;
    if (p.attempt > 1 && state.retriedAtMs === 0) state.retriedAtMs = Date.now();
    if (p.attempt !== 1 || state.frozenAtMs !== 0) return;
    state.frozenAtMs = Date.now();
    return new Promise<void>(() => {
      // After the timeout the activity is cancelled and beat() throws: stop then.
      const t = setInterval(() => {
        try {
          p.beat();
        } catch {
          clearInterval(t);
        }
      }, 200).unref();
    });
  };
  return { state, hook };
}

test('a table created without indices gets a BTREE on its key once it grows large, and its small merges then look keys up', async () => {
  const { table, meta, writer } = await newTable(h, 'keyidx', 1, { periodSecs: { optimize: 0, index: 2, gc: 0 } });
  const seal = async (count: number, seed: number) => (await writer.write('s0', generateRows({ keys: [0, 999_999], count, shard: 's0', shards: meta.shards, seed }))).seq;
  const waiter = new MergeWaiter(h.client);
  await waiter.wait(table, 's0', await seal(KEY_INDEX_AT_ROWS, 1));
  const handle = h.tables.handle(table);
  const commits = async () => (await activityRuns(handle)).filter((r) => r.type === 'commitMerge' && r.outcome === 'completed').map((r) => r.result as { join?: string; keyIndexMissing?: boolean });
  expect((await commits()).at(-1)).toMatchObject({ join: 'scan', keyIndexMissing: true });
  // The index kind, which had found nothing configured, plans again and builds it.
  const db = await lancedb.connect(h.dataRoot, lanceConnectOptions(h.dataRoot));
  await eventually(async () => (await (await db.openTable(table)).listIndices()).some((i) => i.columns.join() === 'id' && i.indexType.toLowerCase() === 'btree'), 'a BTREE on id', 60_000);
  await waiter.wait(table, 's0', await seal(100, 2));
  expect((await commits()).at(-1)).toMatchObject({ join: 'index' });
  expect((await commits()).at(-1)?.keyIndexMissing).toBeUndefined();
}, 180_000);

test('frozen progress in prepareMerge is detected within stallSecs + one heartbeat interval and retried; the other shard keeps merging', async () => {
  const stallSecs = 4; // long enough for s1 to merge before the retry, even on a loaded machine
  const freeze = freezeFirst((p) => p.activity === 'prepareMerge' && p.phase === 'read');
  const hh = await startHarness({ name: 'stallprep', deps: { faults: { freezeProgress: freeze.hook } } });
  harnesses.push(hh);
  // directMergeMaxBytes 0: small generations still get their preparation activity.
  const { table, writer, handle } = await newTable(hh, 'stallprep', 2, { ...QUIET, stallSecs: { read: stallSecs, encode: stallSecs, commit: 30 }, directMergeMaxBytes: 0 });
  const load = new Load(writer, { rowsPerGeneration: 500, keySpan: 4000, pauseMs: 0 });
  await load.writeOne('s0');
  await eventually(async () => freeze.state.frozenAtMs > 0, 'the freeze');
  // While s0's preparation is frozen, s1 merges: preparation never holds the turn.
  await load.writeOne('s1');
  await new MergeWaiter(hh.client).wait(table, 's1', 1);
  expect(freeze.state.retriedAtMs).toBe(0);

  await eventually(async () => freeze.state.retriedAtMs > 0, 'the retry', 30_000, 50);
  // Temporal's retry waits its initial interval (1 s) after the timeout before attempt 2.
  const detectedSecs = (freeze.state.retriedAtMs - freeze.state.frozenAtMs) / 1000 - 1;
  console.log(`prepareMerge stall detected after ${detectedSecs.toFixed(2)} s (stallSecs ${stallSecs}, heartbeat interval ${0.8 * stallSecs} s)`);
  expect(detectedSecs).toBeLessThanOrEqual(stallSecs + 0.8 * stallSecs + TIMER_DISPATCH_SECS);
  for (let i = 0; i < 3; i++) for (const s of ['s0', 's1']) await load.writeOne(s);
  await expectExact(hh, table, load, ['s0', 's1']);
  expect((await hh.tables.status(table)).counters.retries).toBeGreaterThanOrEqual(1);
  await recordHistory(hh.client, handle, 'stall-prepare');
});

test('a preparation retried after a stall resumes from the checkpoint its last heartbeat named; status shows its progress', async () => {
  let reads = 0;
  // Attempt 1 checkpoints after every file and freezes after reading its third.
  const freeze = freezeFirst((p) => p.activity === 'prepareMerge' && p.phase === 'read' && (p.attempt > 1 || ++reads >= 3));
  const hh = await startHarness({ name: 'resume', deps: { prepareCheckpointSecs: 0, faults: { freezeProgress: freeze.hook } } });
  harnesses.push(hh);
  const { table, writer, handle } = await newTable(hh, 'resume', 1, { ...QUIET, stallSecs: { read: 2, encode: 2, commit: 30 } });
  const load = new Load(writer, { rowsPerGeneration: 300, keySpan: 3000, pauseMs: 0 });
  // Four generations in one merge unit: merges are paused while they are sealed.
  await hh.tables.pause(table, { kind: 'merge' });
  await eventually(async () => (await hh.tables.status(table)).pausedKinds.includes('merge'), 'pause applied');
  for (let i = 0; i < 4; i++) await load.writeOne('s0');
  // Demand goes out in the background: let all four reach the table before the resume,
  // so the unit created at resume covers 1..4.
  expect(await writer.flush()).toEqual({});
  await hh.tables.resume(table, { kind: 'merge' });

  // While frozen, status joins in the preparation's last heartbeat.
  const seen = await eventually(async () => {
    const p = (await hh.tables.status(table)).preparing.find((u) => u.unitId === 'merge/s0');
    return p?.progress?.filesRead === 3 ? p : null;
  }, 'the frozen preparation in status');
  expect(seen).toMatchObject({ phase: 'read', attempt: 1, progress: { phase: 'read', filesRead: 3, rowsRead: 900, checkpointThroughSeq: 2 } });

  await expectExact(hh, table, load, ['s0']);
  const prepared = (await activityRuns(handle)).filter((r) => r.type === 'prepareMerge' && r.outcome === 'completed');
  expect(prepared).toHaveLength(1);
  expect(prepared[0]!.result).toMatchObject({ fromSeq: 1, toSeq: 4, attempt: 2, resumedFromFile: 2, resumedVia: 'heartbeat' });
  await recordHistory(hh.client, handle, 'resume-from-heartbeat');
});

test('frozen progress in commitMerge is detected, releases the turn, and the unit is retried exactly once in effect', async () => {
  const stallSecs = 2;
  const freeze = freezeFirst((p) => p.activity === 'commitMerge' && p.phase === 'commit');
  const hh = await startHarness({ name: 'stallcommit', deps: { faults: { freezeProgress: freeze.hook } } });
  harnesses.push(hh);
  const { table, writer, handle } = await newTable(hh, 'stallcommit', 2, { ...QUIET, stallSecs: { read: 30, encode: 30, commit: stallSecs }, commitRetryBaseSecs: 1 });
  const load = new Load(writer, { rowsPerGeneration: 500, keySpan: 4000, pauseMs: 0 });
  await load.writeOne('s0');
  await eventually(async () => freeze.state.frozenAtMs > 0, 'the freeze');
  expect((await hh.tables.status(table)).turn?.unitId).toBe('merge/s0');
  await load.writeOne('s1');
  // The stalled commit releases the turn: s1's merge commits while s0's first attempt hangs.
  await new MergeWaiter(hh.client).wait(table, 's1', 1);

  const runs = await activityRuns(handle);
  const timedOut = runs.find((r) => r.type === 'commitMerge' && r.outcome === 'timedOut')!;
  expect(timedOut).toBeDefined();
  const detectedSecs = (timedOut.closedAtMs! - freeze.state.frozenAtMs) / 1000;
  console.log(`commitMerge stall detected after ${detectedSecs.toFixed(2)} s (stallSecs ${stallSecs}, heartbeat interval ${0.8 * stallSecs} s)`);
  expect(detectedSecs).toBeLessThanOrEqual(stallSecs + 0.8 * stallSecs + TIMER_DISPATCH_SECS);

  for (let i = 0; i < 2; i++) for (const s of ['s0', 's1']) await load.writeOne(s);
  await expectExact(hh, table, load, ['s0', 's1']);
  const status = await hh.tables.status(table);
  expect(status.counters.stalls).toBe(1);
  expect(status.counters.retries).toBeGreaterThanOrEqual(1);
  await recordHistory(hh.client, handle, 'stall-commit');
});

test('a truncated generation fails its unit without retries, names the file, holds only that shard', async () => {
  const { table, writer, handle } = await newTable(h, 'corrupt', 2, QUIET);
  const load = new Load(writer, { rowsPerGeneration: 300, keySpan: 3000, pauseMs: 0 });
  await h.tables.pause(table, { kind: 'merge' });
  await eventually(async () => (await h.tables.status(table)).pausedKinds.includes('merge'), 'pause applied');
  await load.writeOne('s0');
  await load.writeOne('s0');
  await load.writeOne('s1');
  // Every demand delivered before the resume, so s0's unit covers both generations (the
  // writer spaces its signals: seq 2's could otherwise come after the resume).
  expect(await writer.flush()).toEqual({});
  const bad = generationFile(tableLayout(h.dataRoot, table), 's0', 2);
  fs.truncateSync(bad, Math.floor(fs.statSync(bad).size / 2));
  await h.tables.resume(table, { kind: 'merge' });

  const held = await eventually(async () => {
    const s = await h.tables.status(table);
    return s.shards.find((x) => x.shard === 's0')?.heldReason ? s : null;
  }, 's0 held');
  const s0 = held.shards.find((x) => x.shard === 's0')!;
  expect(s0.heldReason).toContain(bad);
  expect(s0.mergedThroughSeq).toBe(0);
  expect(held.queue.find((q) => q.unitId === 'merge/s0')?.reason).toContain(bad);
  expect(held.counters.retries).toBe(0);
  const prepares = (await activityRuns(handle)).filter((r) => r.type === 'prepareMerge' && r.outcome === 'failed');
  expect(prepares).toHaveLength(1);

  // The other shard keeps merging; s0 stays exactly where it was: nothing skipped.
  await load.writeOne('s1');
  await new MergeWaiter(h.client).wait(table, 's1', 2);
  const after = await h.tables.status(table);
  expect(after.shards.find((x) => x.shard === 's0')).toMatchObject({ sealedThroughSeq: 2, mergedThroughSeq: 0 });
  const { rows } = await readTableRows(h.dataRoot, table);
  expect([...rows.values()].every((r) => shardOfKey(r.id as number, ['s0', 's1']) === 's1')).toBe(true);
  expect(rows.size).toBe(load.model().size - [...load.model().keys()].filter((k) => shardOfKey(k, ['s0', 's1']) === 's0').length);
  await recordHistory(h.client, handle, 'corrupt-generation');
});

// gc on both storage backends (S3: a fresh harness on the run's SeaweedFS).
test.each(STORAGES)('index builds the configured index and gc deletes merged generations without lowering sealed-through (%s storage)', async (storage) => {
  const hh = storage === 'fs' ? h : await startHarness({ name: 'idxgc', storage });
  const exists = async (loc: string): Promise<boolean> => (await storageAt(hh.dataRoot).stat(loc)) !== null;
  try {
  const table = uniqueName('idxgc');
  const meta = await createTableMeta(hh.dataRoot, { name: table, key: 'id', shards: shardNames(2), indices: [{ column: 'id', type: 'btree' }] });
  await hh.tables.start({ ...workflowArgsFor(meta), policy: { periodSecs: { optimize: 0, index: 0, gc: 0 }, snapshotIntervalSecs: 1 } });
  const handle = hh.tables.handle(table);
  const writer = await TableWriter.open(hh.tables, hh.dataRoot, table);
  const load = new Load(writer, { rowsPerGeneration: 300, keySpan: 3000, pauseMs: 0 });
  for (let i = 0; i < 3; i++) for (const s of meta.shards) await load.writeOne(s);
  await expectExact(hh, table, load, meta.shards);

  await hh.tables.bump(table, { kind: 'index', reason: 'build the btree now' });
  await eventually(async () => (await hh.tables.status(table)).counters.turns.index >= 1, 'the index turn');
  const db = await lancedb.connect(hh.dataRoot, lanceConnectOptions(hh.dataRoot));
  const indices = await (await db.openTable(table)).listIndices();
  expect(indices.map((i) => i.columns)).toEqual([['id']]);

  const layout = tableLayout(hh.dataRoot, table);
  expect(await exists(generationFile(layout, 's0', 1))).toBe(true);
  await hh.tables.bump(table, { kind: 'gc', reason: 'clean up now' });
  await eventually(async () => (await hh.tables.status(table)).counters.turns.gc >= 1, 'the gc turn');
  for (const s of meta.shards) for (let seq = 1; seq <= 3; seq++) expect(await exists(generationFile(layout, s, seq))).toBe(false);
  // Snapshots after gc still see every shard sealed through 3, and the table is intact:
  // wait until two snapshots scheduled after the gc commit closed have completed.
  const gcClosed = (await activityRuns(handle)).find((r) => r.type === 'gc' && r.outcome === 'completed')!.closedEventId!;
  await eventually(
    async () => (await activityRuns(handle)).filter((r) => r.type === 'snapshot' && r.outcome === 'completed' && r.scheduledEventId > gcClosed).length >= 2,
    'two snapshots after gc',
  );
  const after = await hh.tables.status(table);
  expect(after.shards.map((s) => [s.sealedThroughSeq, s.mergedThroughSeq])).toEqual([[3, 3], [3, 3]]);
  await expectExact(hh, table, load, meta.shards);
  // And writing goes on after gc: seq 4 follows.
  expect(await load.writeOne('s0')).toBe(4);
  await expectExact(hh, table, load, meta.shards);
  if (storage === 'fs') await recordHistory(hh.client, handle, 'index-gc');

  // An operator terminates the workflow; the next seal starts a fresh one (merged-through
  // 0 everywhere). Its merges skip what gc recorded as merged and deleted, and the
  // table ends exact.
  await handle.terminate('operator test');
  expect(await load.writeOne('s0')).toBe(5);
  await expectExact(hh, table, load, meta.shards);
  const fresh = await hh.tables.status(table);
  expect(fresh.shards.map((s) => s.mergedThroughSeq)).toEqual([5, 3]);
  expect(fresh.shards.every((s) => s.heldReason === null)).toBe(true);  } finally {
    if (hh !== h) await hh.close();
  }
});
