import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { arrow, readIpcFile, type ArrowTable, type DataType } from '../../src/storage/arrow';
import { createTableMeta, sealGeneration } from '../../src/storage/generation-store';
import { openTable } from '../../src/storage/table-handle';
import { shardOfKey } from '../../src/storage/routing';
import { castToSchema, castsLosslessly, generateRows, RowsRejectedError, splitByShard, writeGeneration, writeRouted } from '../../src/writer';
import { settleSealedHints } from '../../src/storage/sealed-hint';

// Writes without a shard: lossless casts to the table's schema and routing of every
// row to its shard, on real Arrow tables and a real generation store.

const shards = ['s0', 's1', 's2'];
const column = (t: ArrowTable, name: string): unknown[] => [...t.getChild(name)!].map((v) => (v instanceof arrow.Vector ? [...v] : typeof v === 'bigint' ? Number(v) : v));
const types = (t: ArrowTable): string[] => t.schema.fields.map((f) => `${f.name}: ${String(f.type)}`);

/** The schema generateRows + tableFromRows give a table at its first seal. */
const tableSchema = new arrow.Schema([
  new arrow.Field('id', new arrow.Int64(), false),
  new arrow.Field('value', new arrow.Utf8(), true),
  new arrow.Field('n', new arrow.Float64(), true),
  new arrow.Field('_seq', new arrow.Int64(), false),
]);

describe('castToSchema', () => {
  it('casts what tableFromArrays makes (Int32 keys, dictionary strings, Float32) to the table schema, values unchanged', () => {
    const input = arrow.tableFromArrays({ id: Int32Array.from([3, 1, 2]), value: ['a', 'b', 'a'], n: Float32Array.from([0.5, 1, 2]) });
    expect(types(input)).toEqual(['id: Int32', 'value: Dictionary<Int32, Utf8>', 'n: Float32']);
    const cast = castToSchema(input, tableSchema);
    expect(types(cast)).toEqual(['id: Int64', 'value: Utf8', 'n: Float64']);
    expect(column(cast, 'id')).toEqual([3, 1, 2]);
    expect(column(cast, 'value')).toEqual(['a', 'b', 'a']);
    expect(column(cast, 'n')).toEqual([0.5, 1, 2]);
  });

  it('refuses a cast that could change values, naming the column and both types', () => {
    const input = arrow.tableFromArrays({ id: Int32Array.from([1]), value: ['a'], n: BigInt64Array.from([1n]) });
    expect(() => castToSchema(input, tableSchema)).toThrow(new RowsRejectedError("column n: Int64 does not cast losslessly to the table's Float64"));
    const missing = arrow.tableFromArrays({ id: Int32Array.from([1]), value: ['a'] });
    expect(() => castToSchema(missing, tableSchema)).toThrow('column n of the table is missing from the rows');
    const extra = arrow.tableFromArrays({ id: Int32Array.from([1]), value: ['a'], n: Float64Array.from([1]), more: Float64Array.from([1]) });
    expect(() => castToSchema(extra, tableSchema)).toThrow('column more is not a column of the table (columns: id, value, n)');
  });

  it('knows which integer and float casts are lossless', () => {
    const ok: [DataType, DataType][] = [
      [new arrow.Int8(), new arrow.Int64()],
      [new arrow.Uint32(), new arrow.Int64()],
      [new arrow.Uint8(), new arrow.Uint16()],
      [new arrow.Int32(), new arrow.Float64()],
      [new arrow.Int16(), new arrow.Float32()],
      [new arrow.Float32(), new arrow.Float64()],
      [new arrow.Utf8(), new arrow.LargeUtf8()],
      [new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32()), new arrow.Utf8()],
    ];
    const refused: [DataType, DataType][] = [
      [new arrow.Int64(), new arrow.Int32()],
      [new arrow.Uint64(), new arrow.Int64()],
      [new arrow.Int8(), new arrow.Uint64()],
      [new arrow.Int64(), new arrow.Float64()],
      [new arrow.Int32(), new arrow.Float32()],
      [new arrow.Float64(), new arrow.Float32()],
      [new arrow.Float64(), new arrow.Int64()],
      [new arrow.Utf8(), new arrow.Int64()],
    ];
    for (const [from, to] of ok) expect(castsLosslessly(from, to), `${from} -> ${to}`).toBe(true);
    for (const [from, to] of refused) expect(castsLosslessly(from, to), `${from} -> ${to}`).toBe(false);
  });

  it('decodes dictionaries when the table has no schema yet and keeps other types', () => {
    const input = arrow.tableFromArrays({ id: Int32Array.from([1, 2]), value: ['x', 'y'] });
    expect(types(castToSchema(input, null))).toEqual(['id: Int32', 'value: Utf8']);
    const plain = arrow.tableFromArrays({ id: Int32Array.from([1, 2]) });
    expect(castToSchema(plain, null)).toBe(plain);
  });
});

describe('splitByShard', () => {
  it('partitions the rows: every row lands once, in the shard owning its key, other columns alongside', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 0, max: 100_000 }), { minLength: 1, maxLength: 200 }), (keys) => {
        const input = new arrow.Table({
          id: arrow.vectorFromArray(keys.map(BigInt), new arrow.Int64()),
          v: arrow.vectorFromArray(
            keys.map((k) => [k, -k]),
            new arrow.FixedSizeList(2, new arrow.Field('item', new arrow.Float32(), true)),
          ),
        });
        const parts = splitByShard(input, 'id', shards);
        let total = 0;
        for (const [shard, part] of parts) {
          total += part.numRows;
          for (const [i, k] of column(part, 'id').entries()) {
            expect(shardOfKey(k as number, shards)).toBe(shard);
            expect(column(part, 'v')[i]).toEqual([k, -(k as number)]);
          }
        }
        expect(total).toBe(keys.length);
        expect([...parts.keys()]).toEqual(shards.filter((s) => parts.has(s)));
      }),
      { numRuns: 50 },
    );
  });

  it('refuses a null or missing key', () => {
    const nullKey = new arrow.Table({ id: arrow.vectorFromArray([1n, null], new arrow.Int64()) });
    expect(() => splitByShard(nullKey, 'id', shards)).toThrow(new RowsRejectedError('key column id: row 1 has a null key'));
    expect(() => splitByShard(nullKey, 'key', shards)).toThrow('key column key is missing (columns: id)');
  });
});

describe('writeRouted', () => {
  let root: string;
  beforeEach(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-routed-'));
    await createTableMeta(root, { name: 't', key: 'id', shards, indices: [] });
  });
  afterEach(async () => {
    await settleSealedHints(); // a hint written in the background would race the removal
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('seals one generation per owning shard, cast to the schema the first seal fixed', async () => {
    await sealGeneration(root, 't', 's0', generateRows({ keys: [0, 99], count: 3, shard: 's0', shards, seed: 1 }));
    const table = await openTable(root, 't');
    const ids = Array.from({ length: 60 }, (_, i) => i + 1000);
    const input = arrow.tableFromArrays({ id: Int32Array.from(ids), value: ids.map((i) => `v${i}`), n: Float64Array.from(ids) });
    const heard: string[] = [];
    const results = await writeRouted(
      { table, write: (shard, rows) => writeGeneration({ table, shard, rows }) },
      input,
      (r) => heard.push(`${r.shard}:${r.seq}`),
    );
    expect(results.map((r) => r.shard)).toEqual(shards);
    expect(heard).toEqual(['s0:2', 's1:1', 's2:1']);
    const sealed = new Map<number, string>();
    for (const r of results) {
      const file = await readIpcFile(r.path);
      expect(types(file)).toEqual(['id: Int64', 'value: Utf8', 'n: Float64', '_seq: Int64']);
      for (const [i, k] of column(file, 'id').entries()) {
        expect(shardOfKey(k as number, shards)).toBe(r.shard);
        sealed.set(k as number, column(file, 'value')[i] as string);
      }
    }
    expect(sealed).toEqual(new Map(ids.map((i) => [i, `v${i}`])));
  });

  it('seals nothing when a column is refused', async () => {
    await sealGeneration(root, 't', 's0', generateRows({ keys: [0, 99], count: 3, shard: 's0', shards, seed: 1 }));
    const table = await openTable(root, 't');
    const input = arrow.tableFromArrays({ id: Int32Array.from([1, 2, 3]), value: ['a', 'b', 'c'], n: ['x', 'y', 'z'] });
    const writes: string[] = [];
    await expect(writeRouted({ table, write: async (shard) => (writes.push(shard), Promise.reject(new Error('unreachable'))) }, input)).rejects.toThrow(
      "column n: Dictionary<Int32, Utf8> does not cast losslessly to the table's Float64",
    );
    expect(writes).toEqual([]);
  });
});
