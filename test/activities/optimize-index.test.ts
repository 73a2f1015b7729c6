import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTableMeta, sealGeneration } from '../../src/storage/generation-store';
import { openLanceTable } from '../../src/storage/lance-table';
import { makeFixture, prepareAndCommit, run, sealMany, tableRows, type Fixture } from './helpers';

let f: Fixture;
beforeEach(async () => {
  f = await makeFixture({ shards: 1, indices: [{ column: 'id', type: 'btree' }, { column: 'value', type: 'bitmap' }] });
});
afterEach(() => f.cleanup());

describe('optimize and index', () => {
  it('nothing to plan before the first commit', async () => {
    expect(await run(f.acts.planIndex, [{ table: f.table }])).toMatchObject({ missing: [], configured: 2 });
    expect(await run(f.acts.planOptimize, [{ table: f.table }])).toMatchObject({ needed: false, reason: 'nothing committed yet' });
  });

  it('builds missing indices, then plans and runs an optimize that compacts and folds unindexed rows', async () => {
    for (let s = 1; s <= 4; s++) {
      await sealMany(f, 's0', 1, 50, [0, 299], 1000 + s);
      await prepareAndCommit(f, 's0', s, s);
    }
    expect((await run(f.acts.planIndex, [{ table: f.table }])).missing).toHaveLength(2);
    const built = await run(f.acts.ensureIndex, [{ table: f.table }]);
    expect(built.built.map((b) => b.type)).toEqual(['btree', 'bitmap']);
    expect(await run(f.acts.planIndex, [{ table: f.table }])).toMatchObject({ missing: [], configured: 2 });

    await sealMany(f, 's0', 1, 50, [0, 299]);
    await prepareAndCommit(f, 's0', 5, 5);
    const plan = await run(f.acts.planOptimize, [{ table: f.table, retentionSecs: 3600 }]);
    expect(plan.needed).toBe(true);
    expect(plan.numSmallFragments).toBeGreaterThan(1);
    expect(plan.unindexedRows).toBeGreaterThan(0);
    expect(plan.versionsPastRetention).toBe(0);

    const rows = await tableRows(f);
    const r = await run(f.acts.commitOptimize, [{ table: f.table, retentionSecs: 0 }]);
    expect(r.fragmentsRemoved).toBeGreaterThan(1);
    expect(r.fragmentsAdded).toBe(1);
    expect(r.versionsPruned).toBeGreaterThan(0);
    expect(await tableRows(f)).toEqual(rows);
    // One pass of Lance's compaction may leave two fragments; plan and commit converge.
    let after = await run(f.acts.planOptimize, [{ table: f.table }]);
    for (let round = 0; round < 3 && after.needed; round++) {
      await run(f.acts.commitOptimize, [{ table: f.table, retentionSecs: 0 }]);
      after = await run(f.acts.planOptimize, [{ table: f.table }]);
    }
    expect(after).toMatchObject({ needed: false, numSmallFragments: 1, unindexedRows: 0 });
    const tbl = (await openLanceTable(f.root, f.table))!;
    expect(await tbl.countRows()).toBe(rows.length);
  });

  it('merges vector columns and builds an IVF_FLAT index on them', async () => {
    await createTableMeta(f.root, { name: 'vec', key: 'id', shards: ['s0'], indices: [{ column: 'vector', type: 'ivf_flat' }] });
    const rowsOf = (gen: number) =>
      Array.from({ length: 300 }, (_, i) => ({ id: i + gen * 100, tag: `g${gen}`, vector: Array.from({ length: 8 }, (_, d) => Math.sin(i * 8 + d + gen)) }));
    await sealGeneration(f.root, 'vec', 's0', rowsOf(0));
    await sealGeneration(f.root, 'vec', 's0', rowsOf(1));
    const prepared = await run(f.acts.prepareMerge, [{ table: 'vec', key: 'id', shard: 's0', fromSeq: 1, toSeq: 2 }]);
    expect(prepared.rows).toBe(400);
    await run(f.acts.commitMerge, [{ table: 'vec', key: 'id', prepared }]);
    expect((await run(f.acts.planIndex, [{ table: 'vec' }])).missing).toEqual([{ column: 'vector', type: 'ivf_flat' }]);
    const r = await run(f.acts.ensureIndex, [{ table: 'vec' }]);
    expect(r.built).toEqual([{ column: 'vector', type: 'ivf_flat' }]);
    const tbl = (await openLanceTable(f.root, 'vec'))!;
    const hit = await tbl.query().where('id = 150').toArray();
    expect(hit[0].tag).toBe('g1');
    expect(Array.from(hit[0].vector as ArrayLike<number>)[0]).toBeCloseTo(Math.sin(50 * 8 + 1), 5);
    expect(await run(f.acts.planIndex, [{ table: 'vec' }])).toMatchObject({ missing: [], configured: 1 });
  });
});
