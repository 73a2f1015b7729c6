import { afterEach, expect, it } from 'vitest';
import { readIpcFile } from '../../src/storage/arrow';
import { generationFile, tableLayout } from '../../src/storage/layout';
import { KEY_INDEX_AT_ROWS } from '../../src/storage/merge-join';
import { makeFixture, run, sealMany, tableRows, type Fixture } from './helpers';

let f: Fixture | undefined;
afterEach(() => f?.cleanup());

const commit = async (fx: Fixture, seq: number) => {
  const prepared = await run(fx.acts.prepareMerge, [{ table: fx.table, key: 'id', shard: 's0', fromSeq: seq, toSeq: seq }]);
  return { prepared, result: await run(fx.acts.commitMerge, [{ table: fx.table, key: 'id', prepared }]) };
};

it("small merges join through the key's BTREE, large ones scan, and the table is each key's newest row either way", async () => {
  f = await makeFixture({ shards: 1, indices: [{ column: 'id', type: 'btree' }] });
  // seq 1: 20k rows into an empty table, which has no index yet.
  await sealMany(f, 's0', 1, 20_000, [0, 39_999], 1);
  expect((await commit(f, 1)).result.join).toBe('scan');
  await run(f.acts.ensureIndex, [{ table: f.table }]);

  // seq 2 and 3: 100 rows each over keys the index covers and keys past them, so the
  // second finds rows of the first in fragments the index does not cover yet.
  await sealMany(f, 's0', 2, 100, [0, 49_999], 2);
  const second = await commit(f, 2);
  expect(second.result.join).toBe('index');
  expect((await commit(f, 3)).result.join).toBe('index');
  // seq 2 again, after seq 3: every one of its rows is already there or newer.
  const again = await run(f.acts.commitMerge, [{ table: f.table, key: 'id', prepared: second.prepared }]);
  expect(again).toMatchObject({ join: 'index', rows: 0 });

  // seq 4: a batch large beside the table scans.
  await sealMany(f, 's0', 1, 5_000, [0, 49_999], 4);
  expect((await commit(f, 4)).result.join).toBe('scan');

  const newest = new Map<string, { id: string; value: string; n: number; seq: string }>();
  const layout = tableLayout(f.root, f.table);
  for (let seq = 1; seq <= 4; seq++) {
    for (const r of (await readIpcFile(generationFile(layout, 's0', seq))).toArray() as { id: unknown; value: unknown; n: unknown }[]) {
      newest.set(String(r.id), { id: String(r.id), value: String(r.value), n: Number(r.n), seq: String(seq) });
    }
  }
  expect(await tableRows(f)).toEqual([...newest.values()].sort((a, b) => Number(a.id) - Number(b.id)));
});

it('a table grown past KEY_INDEX_AT_ROWS without indices gets a BTREE on its key through the index kind, and merges then look keys up', async () => {
  f = await makeFixture({ shards: 1 });
  await sealMany(f, 's0', 1, 1_000, [0, 999_999], 1);
  const small = (await commit(f, 1)).result;
  expect(small.keyIndexMissing).toBeUndefined();
  expect(await run(f.acts.planIndex, [{ table: f.table }])).toMatchObject({ missing: [], configured: 0 });

  await sealMany(f, 's0', 1, KEY_INDEX_AT_ROWS, [0, 999_999], 2);
  const grown = (await commit(f, 2)).result;
  expect(grown).toMatchObject({ join: 'scan', keyIndexMissing: true });
  expect(await run(f.acts.planIndex, [{ table: f.table }])).toMatchObject({ missing: [{ column: 'id', type: 'btree' }], configured: 1 });
  expect((await run(f.acts.ensureIndex, [{ table: f.table }])).built).toEqual([{ column: 'id', type: 'btree' }]);
  expect(await run(f.acts.planIndex, [{ table: f.table }])).toMatchObject({ missing: [], configured: 1 });

  await sealMany(f, 's0', 1, 100, [0, 999_999], 3);
  const after = (await commit(f, 3)).result;
  expect(after.join).toBe('index');
  expect(after.keyIndexMissing).toBeUndefined();
  const rows = await tableRows(f);
  expect(new Set(rows.map((r) => r.id)).size).toBe(rows.length);
}, 120_000);
