import { afterAll, beforeAll, expect, test } from 'vitest';
import type { SnapshotResult } from '../../activities/contract';
import { MergeWaiter } from '../../src/client/merge-waiter';
import { TableWriter, workflowArgsFor } from '../../src/client/table-writer';
import type { PolicyOverride } from '../../src/config/policy-schema';
import { shardNames } from '../../src/messages/names';
import { createTableMeta, sealGeneration } from '../../src/storage/generation-store';
import { generateRows } from '../../src/writer';
import { eventually, startHarness, uniqueName, type Harness } from '../support/harness';
import { activityRuns, timersStarted, type ActivityRun } from '../support/history';
import { readTableRows } from '../support/lance-read';
import { Load } from '../support/load';
import { recordHistory } from '../support/record-history';

// Idle tables on the real server (README "Idle tables"), with small policy values: the
// scan period backs off to snapshotMaxIntervalSecs and a seal whose demand signal never
// came is still merged within that bound; optimize, index and gc run after a change,
// not on an idle table, and a bump still runs them at once.

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ name: 'idle' });
});
afterAll(async () => h?.close());

async function newTable(prefix: string, policy: PolicyOverride) {
  const table = uniqueName(prefix);
  const meta = await createTableMeta(h.dataRoot, { name: table, key: 'id', shards: shardNames(2), indices: [] });
  await h.tables.start({ ...workflowArgsFor(meta), policy });
  const writer = await TableWriter.open(h.tables, h.dataRoot, table);
  return { table, writer, handle: h.tables.handle(table) };
}

async function expectExact(table: string, load: Load) {
  const model = load.model();
  const { count, rows } = await readTableRows(h.dataRoot, table);
  expect(count).toBe(model.size);
  for (const [k, want] of model) expect(rows.get(k), `row ${k}`).toEqual(want);
}

const count = (runs: ActivityRun[], type: string) => runs.filter((r) => r.type === type).length;

test('a seal without any demand signal on an idle table is found by a scan at most snapshotMaxIntervalSecs apart and merged', async () => {
  const MAX = 6;
  const { table, writer, handle } = await newTable('lost', { snapshotIntervalSecs: 1, snapshotMaxIntervalSecs: MAX, periodSecs: { optimize: 0, index: 0, gc: 0 } });
  const load = new Load(writer, { rowsPerGeneration: 100, keySpan: 1000, pauseMs: 0 });
  const waiter = new MergeWaiter(h.client);
  await waiter.wait(table, 's0', await load.writeOne('s0'));
  // The write made the period short; with nothing more happening it doubles up to MAX.
  await eventually(async () => (await h.tables.status(table)).snapshot.everySecs === MAX, `the scan period at its max (${MAX} s)`, 60_000, 500);

  // A writer that dies between seal and signal: the seal alone, behind the workflow's back.
  const rows = generateRows({ keys: [0, 999], count: 100, shard: 's0', shards: ['s0', 's1'], seed: 7 });
  const sealedAt = Date.now();
  const sealed = await sealGeneration(h.dataRoot, table, 's0', rows);
  load.written.get('s0')!.push({ seq: sealed.seq, rows });
  const r = await waiter.wait(table, 's0', sealed.seq);
  const mergedAt = Date.now();
  expect(r.mergedThroughSeq).toBe(sealed.seq);
  await expectExact(table, load);

  // Why that is within the bound, from the workflow's own decisions (no wall-clock
  // asserts): every timer it set was at most MAX, and no scan was skipped: the scan
  // that found the seal was running at the seal or was the first one started after it.
  const timers = await timersStarted(handle);
  expect(timers.length).toBeGreaterThan(3);
  expect(Math.max(...timers.map((t) => t.secs))).toBeLessThanOrEqual(MAX);
  const scans = (await activityRuns(handle)).filter((x) => x.type === 'snapshot');
  const sees = (x: ActivityRun) => (x.result as SnapshotResult | undefined)?.shards.some((s) => s.shard === 's0' && s.sealedThroughSeq >= sealed.seq) ?? false;
  const found = scans.find(sees);
  expect(found).toBeDefined();
  expect(scans.filter((x) => x.scheduledEventId < found!.scheduledEventId && x.scheduledAtMs > sealedAt)).toEqual([]);
  const gap = timers.filter((t) => t.atMs <= found!.scheduledAtMs).at(-1);
  console.log(
    `lost signal: found by the scan ${((found!.scheduledAtMs - sealedAt) / 1000).toFixed(1)} s after the seal (timer before it: ${gap?.secs} s, bound ${MAX} s), merged ${((mergedAt - sealedAt) / 1000).toFixed(1)} s after the seal`,
  );
  await recordHistory(h.client, handle, 'idle-lost-signal');
});

test('optimize and gc run after a change, not while the table is idle; index, with no index configured, only when bumped', async () => {
  const MAX = 3;
  const { table, writer, handle } = await newTable('quiet', { snapshotIntervalSecs: 1, snapshotMaxIntervalSecs: MAX, periodSecs: { optimize: 1, index: 1, gc: 1 } });
  const load = new Load(writer, { rowsPerGeneration: 100, keySpan: 1000, pauseMs: 0 });
  await new MergeWaiter(h.client).wait(table, 's0', await load.writeOne('s0'));

  // The merge moved the table version and s0's mergedThroughSeq: optimize and gc plan
  // once (no merge came to ride within their slack). table.json configures no index and
  // the workflow was started knowing it: index has nothing to build, so it never plans.
  const afterChange = await eventually(async () => {
    const runs = await activityRuns(handle);
    return ['planOptimize', 'planGc'].every((p) => runs.some((x) => x.type === p && x.outcome !== null)) ? runs : null;
  }, 'optimize and gc planned after the merge');
  // Then idle: wait for four more scans at the longest period (about 4 * MAX s).
  const scansThen = count(afterChange, 'snapshot');
  const idle = await eventually(async () => {
    const runs = await activityRuns(handle);
    return count(runs, 'snapshot') >= scansThen + 4 && (await h.tables.status(table)).snapshot.everySecs === MAX ? runs : null;
  }, 'four scans on the idle table', 60_000, 500);
  for (const [p, n] of [['planOptimize', 1], ['planGc', 1], ['planIndex', 0]] as const) expect({ p, n: count(idle, p) }).toEqual({ p, n });
  const idleSince = afterChange.at(-1)!.scheduledAtMs;
  expect((await timersStarted(handle)).filter((t) => t.atMs > idleSince).every((t) => t.secs <= MAX)).toBe(true);

  // An operator can still ask for one on the idle table.
  await h.tables.bump(table, { kind: 'index', reason: 'check indices now' });
  await eventually(async () => count(await activityRuns(handle), 'planIndex') === 1, 'index planned after the bump');
  const bumped = await activityRuns(handle);
  expect([count(bumped, 'planOptimize'), count(bumped, 'planGc')]).toEqual([1, 1]);

  // A change plans optimize and gc again, and still not index.
  await new MergeWaiter(h.client).wait(table, 's0', await load.writeOne('s0'));
  const planned = await eventually(async () => {
    const runs = await activityRuns(handle);
    return count(runs, 'planOptimize') === 2 && count(runs, 'planGc') === 2 ? runs : null;
  }, 'optimize and gc planned after the second merge');
  // Every workflow task decides every due kind, so a task three index periods later (a
  // scan it scheduled, on the workflow's clock) has passed any later plan of index.
  const plannedAt = Math.max(...planned.filter((r) => r.type === 'planOptimize' || r.type === 'planGc').map((r) => r.decidedAtMs));
  const PERIOD_MS = 1000;
  const later = await eventually(async () => {
    const runs = await activityRuns(handle);
    return runs.some((r) => r.type === 'snapshot' && r.decidedAtMs >= plannedAt + 3 * PERIOD_MS) ? runs : null;
  }, 'a scan three index periods after the second plans', 60_000, 500);
  expect(count(later, 'planIndex')).toBe(1);
  await expectExact(table, load);
  await recordHistory(h.client, handle, 'idle-periodic');
});
