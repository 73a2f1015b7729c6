import fs from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openLanceTable } from '../../src/storage/lance-table';
import { generationFile, tableLayout } from '../../src/storage/layout';
import { makeFixture, prepareAndCommit, run, sealMany, tableRows, type Fixture } from './helpers';

// optimize and gc riding a merge's commit (activities/ride-maintenance.ts,
// src/policy/rides.ts): planned and run after the upsert, in the same activity.

let f: Fixture;
beforeEach(async () => {
  f = await makeFixture({ shards: 1 });
});
afterEach(() => f.cleanup());

const prep = (fromSeq: number, toSeq: number) => run(f.acts.prepareMerge, [{ table: f.table, key: 'id', shard: 's0', fromSeq, toSeq }]);
const fragments = async () => (await (await openLanceTable(f.root, f.table))!.stats()).fragmentStats.numFragments;

describe('maintenance riding a merge commit', () => {
  it('compacts and deletes merged generations after the upsert, and reports each', async () => {
    for (let s = 1; s <= 3; s++) {
      await sealMany(f, 's0', 1, 40, [0, 199], 2000 + s);
      await prepareAndCommit(f, 's0', s, s);
    }
    await sealMany(f, 's0', 1, 40, [0, 199], 2004);
    expect(await fragments()).toBe(3);
    const p = await prep(4, 4);
    const r = await run(f.acts.commitMerge, [{ table: f.table, key: 'id', prepared: p, maintain: { optimize: { retentionSecs: 3600 }, gc: { mergedThrough: [{ shard: 's0', mergedThroughSeq: 3 }] } } }]);
    // Four small fragments (three and the merge's own) compacted into one.
    expect(await fragments()).toBe(1);
    expect(r.maintained?.optimize).toMatchObject({ rows: (await tableRows(f)).length });
    expect(r.maintained?.optimize?.error).toBeUndefined();
    expect(r.version).toBe(r.maintained!.optimize!.version);
    expect(r.version).toBe(await (await openLanceTable(f.root, f.table))!.version());
    // gc took generations 1-3 (merged before this commit) and their prepared batches; 4 stays for the next.
    const l = tableLayout(f.root, f.table);
    for (let s = 1; s <= 3; s++) expect(fs.existsSync(generationFile(l, 's0', s))).toBe(false);
    expect(fs.existsSync(generationFile(l, 's0', 4))).toBe(true);
    expect(r.maintained?.gc?.rows).toBeGreaterThanOrEqual(3);
    expect(r.rows).toBe(p.rows);
  });

  it('nothing to do: the ride reports it and the version is the merge\'s', async () => {
    await sealMany(f, 's0', 1, 40, [0, 199]);
    const p = await prep(1, 1);
    const r = await run(f.acts.commitMerge, [{ table: f.table, key: 'id', prepared: p, maintain: { optimize: { retentionSecs: 3600 }, gc: { mergedThrough: [{ shard: 's0', mergedThroughSeq: 0 }] } } }]);
    expect(r.maintained).toMatchObject({ optimize: { rows: 0 }, gc: { rows: 0 } });
    expect(r.maintained?.optimize?.version).toBeUndefined();
    expect(r.version).toBe(await (await openLanceTable(f.root, f.table))!.version());
  });

  it('a ride that fails is reported, and the merge is not undone', async () => {
    await sealMany(f, 's0', 1, 40, [0, 199]);
    const p = await prep(1, 1);
    const r = await run(f.acts.commitMerge, [{ table: f.table, key: 'id', prepared: p, maintain: { gc: { mergedThrough: [{ shard: 'nope', mergedThroughSeq: 1 }] } } }]);
    expect(r.maintained?.gc?.error).toMatch(/shard nope is not a shard/);
    expect(await tableRows(f)).toHaveLength(p.rows);
  });
});
