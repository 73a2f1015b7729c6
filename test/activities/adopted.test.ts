import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as lancedb from '@lancedb/lancedb';
import { ApplicationFailure } from '@temporalio/activity';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createActivities } from '../../activities';
import { isCommitConflict, observe } from '../../activities/adopted';
import { openAdopted } from '../../src/storage/adopted-table';
import { run } from './helpers';

// The adopted tables' activities (activities/adopted.ts) on real Lance tables that the
// test writes directly, as an outside process would: lancedb.connect(dir).openTable.

let dir: string;
let uri: string;
let acts: ReturnType<typeof createActivities>;
let db: lancedb.Connection;

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-adopted-'));
  uri = path.join(dir, 'events.lance');
  acts = createActivities({ dataRoot: path.join(dir, 'turnstile') });
  // The outside writer's own connection, not the one Turnstile's activities cache.
  db = await lancedb.connect(dir);
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const rowsOf = (from: number, count: number, tag = 'a') => Array.from({ length: count }, (_, i) => ({ id: from + i, value: `${tag}${from + i}`, n: from + i }));

/** A table of `batches` appends of `per` rows each: one small fragment per append. */
async function outsideTable(batches: number, per: number): Promise<lancedb.Table> {
  const tbl = await db.createTable('events', rowsOf(0, per));
  for (let b = 1; b < batches; b++) await tbl.add(rowsOf(b * per, per));
  return tbl;
}

const ref = () => ({ table: 'events', uri });
const plan = (kind: 'optimize' | 'index' | 'gc', over: { retentionSecs?: number; compactAtSmallFragments?: number; indexAtUnindexedShare?: number; pruneAtVersions?: number } = {}) =>
  run(acts.planAdopted, [{ ...ref(), kind, retentionSecs: 3600, compactAtSmallFragments: 32, indexAtUnindexedShare: 0.1, pruneAtVersions: 20, ...over }]);
function commit(kind: 'index' | 'gc', over: { retentionSecs?: number; indexAtUnindexedShare?: number; conflictRetries?: number; conflictBackoffMaxSecs?: number } = {}) {
  // Also the fields a keyed compaction reads, so the input fits the commit activity with or without them.
  const input = { ...ref(), kind, key: '', retentionSecs: 3600, compactAtSmallFragments: 32, indexAtUnindexedShare: 0.1, conflictRetries: 8, conflictBackoffMaxSecs: 0.1, ...over };
  return run(acts.commitAdopted, [input]);
}

/** What a reader opening the table now sees (a handle of its own, at the latest version). */
async function fresh(): Promise<lancedb.Table> {
  const t = await (await lancedb.connect(dir)).openTable('events');
  await t.checkoutLatest();
  return t;
}

describe('observeTable', () => {
  it("reports the table's own numbers: version, rows, bytes, fragments, small fragments, indices and their unindexed rows", async () => {
    const tbl = await outsideTable(6, 40);
    await tbl.createIndex('id', { config: lancedb.Index.btree() });
    await tbl.createIndex('value', { config: lancedb.Index.bitmap() });
    await tbl.add(rowsOf(1000, 15));
    const o = await run(acts.observeTable, [ref()]);
    const t = await fresh();
    const stats = await t.stats();
    const indices = await t.listIndices();
    let unindexed = 0;
    for (const ix of indices) unindexed += (await t.indexStats(ix.name))!.numUnindexedRows;
    expect(o).toMatchObject({
      version: await t.version(),
      rows: stats.numRows,
      bytes: stats.totalBytes,
      fragments: stats.fragmentStats.numFragments,
      smallFragments: stats.fragmentStats.numSmallFragments,
      unindexedRows: unindexed,
      indices: 2,
    });
    // And those are what the test did: 7 appends, 255 rows, 15 of them after both indices.
    expect(o).toMatchObject({ rows: 255, fragments: 7, unindexedRows: 30 });
    expect(Math.abs(o.atMs - Date.now())).toBeLessThan(10_000);
  });

  it("sees another process's commits made after an earlier look (a fresh handle every time)", async () => {
    const tbl = await outsideTable(2, 10);
    const a = await run(acts.observeTable, [ref()]);
    await tbl.add(rowsOf(100, 10));
    const b = await run(acts.observeTable, [ref()]);
    expect(b.version).toBe(a.version + 1);
    expect(b.rows).toBe(a.rows + 10);
    expect(b.fragments).toBe(a.fragments + 1);
  });

  it('observe() on a handle gives the same numbers as the activity', async () => {
    await outsideTable(3, 10);
    const { atMs: _a, ...viaActivity } = await run(acts.observeTable, [ref()]);
    const { atMs: _b, ...direct } = await observe(await openAdopted(uri));
    expect(direct).toEqual(viaActivity);
  });
});

describe('planAdopted', () => {
  it('optimize is needed from exactly compactAtSmallFragments small fragments on', async () => {
    await outsideTable(5, 20);
    const small = (await (await fresh()).stats()).fragmentStats.numSmallFragments;
    expect(small).toBe(5);
    const at = await plan('optimize', { compactAtSmallFragments: 5 });
    expect(at).toMatchObject({ needed: true, numFragments: 5, numSmallFragments: 5 });
    expect(at.reason).toMatch(/^5 small fragments of 5 \(compact at 5\)$/);
    expect(at.predictedBytes).toBe((await (await fresh()).stats()).totalBytes);
    expect(await plan('optimize', { compactAtSmallFragments: 6 })).toMatchObject({ needed: false, numSmallFragments: 5 });
    expect(await plan('optimize', { compactAtSmallFragments: 4 })).toMatchObject({ needed: true });
  });

  it('index: a BTREE index with rows added after it is stale once the unindexed share reaches indexAtUnindexedShare, listed once', async () => {
    const tbl = await outsideTable(4, 25);
    await tbl.createIndex('id', { config: lancedb.Index.btree() });
    const [ix] = await tbl.listIndices();
    expect(await plan('index', { indexAtUnindexedShare: 0.2 })).toMatchObject({ needed: false, staleIndices: [], unindexedRows: 0 });
    // 25 of 125 rows unindexed: exactly a share of 0.2.
    await tbl.add(rowsOf(500, 25));
    const p = await plan('index', { indexAtUnindexedShare: 0.2 });
    expect(p).toMatchObject({ needed: true, staleIndices: [ix!.name], unindexedRows: 25 });
    expect(p.reason).toContain(ix!.name);
    expect(await plan('index', { indexAtUnindexedShare: 0.21 })).toMatchObject({ needed: false, staleIndices: [] });
  });

  // The plan multiplies the share by the rows, which rounds above the exact count for
  // many two-decimal shares (0.07 * 100 is 7.000000000000001), unlike adoptedWants.
  it('index: exactly the share is stale for a share like 0.07 too (7 unindexed of 100 rows)', async () => {
    const tbl = await db.createTable('events', rowsOf(0, 93));
    await tbl.createIndex('id', { config: lancedb.Index.btree() });
    await tbl.add(rowsOf(500, 7));
    expect(await plan('index', { indexAtUnindexedShare: 0.07 })).toMatchObject({ needed: true, unindexedRows: 7 });
  });

  it('gc counts the versions older than retentionSecs (never the latest), and is needed from pruneAtVersions on', async () => {
    const tbl = await outsideTable(4, 10);
    const oldThrough = await tbl.version();
    await sleep(3_000);
    for (let i = 0; i < 3; i++) await tbl.add(rowsOf(1000 + i * 10, 10));
    const p = await plan('gc', { retentionSecs: 2, pruneAtVersions: oldThrough });
    expect(p.versionsPastRetention).toBe(oldThrough);
    expect(p.needed).toBe(true);
    expect(p.reason).toBe(`${oldThrough} versions older than 2 s (prune at ${oldThrough})`);
    expect(await plan('gc', { retentionSecs: 2, pruneAtVersions: oldThrough + 1 })).toMatchObject({ needed: false, versionsPastRetention: oldThrough });
    expect(await plan('gc', { retentionSecs: 3600 })).toMatchObject({ needed: false, versionsPastRetention: 0 });
    // With a retention of 0 every version but the latest is past it.
    expect((await plan('gc', { retentionSecs: 0 })).versionsPastRetention).toBe((await tbl.listVersions()).length - 1);
  });
});

describe('commitAdopted', () => {
  it("index: rebuilds the stale index under its own name and type; nothing is left unindexed; the table's rows are untouched", async () => {
    const tbl = await outsideTable(4, 25);
    await tbl.createIndex('id', { config: lancedb.Index.btree() });
    const [ix] = await tbl.listIndices();
    await tbl.add(rowsOf(500, 40));
    expect((await (await fresh()).indexStats(ix!.name))!.numUnindexedRows).toBe(40);
    const before = await tbl.version();
    const r = await commit('index', { indexAtUnindexedShare: 0.2 });
    expect(r.indicesRebuilt).toEqual([ix!.name]);
    expect(r.conflicts).toBe(0);
    expect(r.rows).toBe(140);
    const t = await fresh();
    expect(r.version).toBe(await t.version());
    expect(r.version).toBeGreaterThan(before);
    const stats = await t.indexStats(ix!.name);
    expect(stats).toMatchObject({ numUnindexedRows: 0, numIndexedRows: 140 });
    expect((await t.listIndices()).map((i) => [i.name, i.columns, i.indexType])).toEqual([[ix!.name, ['id'], ix!.indexType]]);
    expect(r.observation).toMatchObject({ version: r.version, unindexedRows: 0, rows: 140, indices: 1 });
    expect(await t.countRows()).toBe(140);
    expect(await t.countRows('id >= 500')).toBe(40);
  });

  it('index: an index below the share is left alone', async () => {
    const tbl = await outsideTable(4, 25);
    await tbl.createIndex('id', { config: lancedb.Index.btree() });
    await tbl.add(rowsOf(500, 5));
    const before = await tbl.version();
    const r = await commit('index', { indexAtUnindexedShare: 0.5 });
    expect(r.indicesRebuilt).toEqual([]);
    expect(r.version).toBe(before);
    expect((await (await fresh()).indexStats((await tbl.listIndices())[0]!.name))!.numUnindexedRows).toBe(5);
  });

  it('gc with retentionSecs R prunes versions older than R and never one younger than R', async () => {
    const tbl = await outsideTable(5, 10);
    const oldThrough = await tbl.version();
    await sleep(4_000);
    for (let i = 0; i < 3; i++) await tbl.add(rowsOf(1000 + i * 10, 10));
    const before = await tbl.listVersions();
    const R = 2.5;
    const startMs = Date.now();
    const r = await commit('gc', { retentionSecs: R });
    const endMs = Date.now();
    const after = new Set((await (await fresh()).listVersions()).map((v) => v.version));
    // Younger than R when the commit ended, so younger than R whenever it looked: kept.
    const young = before.filter((v) => new Date(v.timestamp).getTime() > endMs - R * 1000);
    expect(young.map((v) => v.version)).toEqual(before.filter((v) => v.version > oldThrough).map((v) => v.version));
    for (const v of young) expect(after.has(v.version), `version ${v.version} (${endMs - new Date(v.timestamp).getTime()} ms old) is gone`).toBe(true);
    // Older than R when the commit began: pruned.
    const old = before.filter((v) => new Date(v.timestamp).getTime() < startMs - R * 1000);
    expect(old.map((v) => v.version)).toEqual(before.filter((v) => v.version <= oldThrough).map((v) => v.version));
    for (const v of old) expect(after.has(v.version), `version ${v.version} is still there`).toBe(false);
    expect(r.versionsPruned).toBe(old.length);
    expect(r.conflicts).toBe(0);
    expect(r.rows).toBe(80);
    expect(await (await fresh()).countRows()).toBe(80);
  });
});

describe('commit conflicts with outside writers', () => {
  it('isCommitConflict: the three ways lancedb says a commit lost a race, and nothing else', () => {
    const lost = [
      'Retryable commit conflict for version 12: This Rewrite transaction was preempted by concurrent transaction Update at version 12. Please retry.',
      'lance error: This CreateIndex transaction was preempted by concurrent transaction Rewrite at version 4',
      'Too many concurrent writers. Please try again later.',
    ];
    for (const m of lost) {
      expect(isCommitConflict(new Error(m)), m).toBe(true);
      expect(isCommitConflict(m), m).toBe(true);
    }
    const other = [
      'Commit conflict for version 7: This Rewrite transaction is incompatible with concurrent transaction Restore at version 7.',
      'Table events was not found',
      'IO error: No such file or directory (os error 2)',
      'Not found: /tmp/x/events.lance/_versions/3.manifest',
      'commit conflict: lost 3 races with outside writers',
      '',
    ];
    for (const m of other) expect(isCommitConflict(new Error(m)), m).toBe(false);
    expect(isCommitConflict(undefined)).toBe(false);
    expect(isCommitConflict({ message: 'Too many concurrent writers' })).toBe(false);
  });

  it('gc against a writer updating rows all along: it commits, counting the races it lost, or gives up after conflictRetries + 1 as a retryable CommitConflict', async () => {
    await outsideTable(24, 40);
    const writer = await (await lancedb.connect(dir)).openTable('events');
    let stop = false;
    let updates = 0;
    const writerErrors: string[] = [];
    const writing = (async () => {
      for (let i = 0; !stop; i++) {
        // Rows spread over every fragment, so any compaction meets an update of its input.
        const ids = Array.from({ length: 24 }, (_, f) => f * 40 + (i % 40));
        try {
          await writer
            .mergeInsert('id')
            .whenMatchedUpdateAll()
            .execute(ids.map((id) => ({ id, value: `u${i}`, n: i })));
          updates++;
        } catch (e) {
          writerErrors.push((e as Error).message.split('\n')[0]!);
        }
      }
    })();
    try {
      // A few rounds: each compacts what the writer's updates added since the last.
      for (let round = 0; round < 3; round++) {
        const seen = updates;
        while (updates < seen + 3) await sleep(10);
        const outcome = await commit('gc', { retentionSecs: 3600, conflictRetries: 2, conflictBackoffMaxSecs: 0.1 }).then(
          (r) => ({ ok: true as const, r }),
          (e: unknown) => ({ ok: false as const, e }),
        );
        if (outcome.ok) {
          expect(outcome.r.conflicts).toBeGreaterThanOrEqual(0);
          expect(outcome.r.conflicts).toBeLessThanOrEqual(2);
          expect(outcome.r.rows).toBe(960);
          expect(outcome.r.fragmentsRemoved).toBeGreaterThan(1);
        } else {
          const e = outcome.e;
          expect(e, String(e)).toBeInstanceOf(ApplicationFailure);
          const f = e as ApplicationFailure;
          expect(f.type).toBe('CommitConflict');
          expect(f.nonRetryable).toBe(false);
          expect((f.details?.[0] as { conflicts?: number }).conflicts).toBe(3);
          expect(f.message).toMatch(/^commit conflict: lost 3 races with outside writers/);
        }
      }
    } finally {
      stop = true;
      await writing;
    }
    expect(updates).toBeGreaterThanOrEqual(9);
    expect(writerErrors.filter((m) => !isCommitConflict(m))).toEqual([]);
    // Whatever happened, no row was lost or doubled.
    expect(await (await fresh()).countRows()).toBe(960);
  });
});
