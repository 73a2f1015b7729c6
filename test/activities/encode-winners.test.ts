import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NewestRowPerKey } from '../../activities/newest-row-per-key';
import { arrow, decodeOwnIpcFile, encodeIpcFilePending, type ArrowTable } from '../../src/storage/arrow';
import { finishedBytes } from '../../src/storage/storage';

// The winners gathered straight into the IPC file must be the very bytes Arrow's writer
// makes of build()'s table: same layout, same padding, same checksum.

const COLUMNS = {
  i32: () => new arrow.Int32(),
  u16: () => new arrow.Uint16(),
  f64: () => new arrow.Float64(),
  f32: () => new arrow.Float32(),
  s: () => new arrow.Utf8(),
  b: () => new arrow.Bool(),
} as const;
type ColumnKind = keyof typeof COLUMNS;

const valueOf = (kind: ColumnKind, key: number, seq: number, withNulls: boolean): unknown => {
  if (withNulls && (key + seq) % 3 === 0) return null;
  if (kind === 's') return (key * 7 + seq) % 5 === 0 ? '' : `v${key}-${seq}${'é'.repeat(key % 4)}`.repeat(1 + (key % 9));
  if (kind === 'b') return (key + seq) % 2 === 0;
  if (kind === 'f64' || kind === 'f32') return key / 4 + seq;
  return (key * 31 + seq) % 60_000;
};

/** A generation: Int64 keys (with repeats), the chosen columns, in one or two batches. */
function generation(keys: number[], seq: number, kinds: ColumnKind[], nullsIn: ColumnKind | null, split: boolean): ArrowTable {
  const fields = [new arrow.Field('id', new arrow.Int64(), false), ...kinds.map((k) => new arrow.Field(k, COLUMNS[k](), k === nullsIn))];
  const schema = new arrow.Schema(fields);
  const batchOf = (ks: number[]) =>
    new arrow.RecordBatch(
      schema,
      arrow.makeData({
        type: new arrow.Struct(fields),
        length: ks.length,
        nullCount: 0,
        children: [
          arrow.makeVector(BigInt64Array.from(ks, BigInt)).data[0]!,
          ...kinds.map((k) => arrow.vectorFromArray(ks.map((key) => valueOf(k, key, seq, k === nullsIn)), COLUMNS[k]()).data[0]!),
        ],
      }),
    );
  const cut = split ? Math.floor(keys.length / 2) : keys.length;
  return new arrow.Table(schema, [batchOf(keys.slice(0, cut)), ...(cut < keys.length ? [batchOf(keys.slice(cut))] : [])]);
}

const dirty = (n: number): Buffer => Buffer.alloc(n, 0xa5);

describe('encodeYielding: winners gathered into the IPC file', () => {
  it("gives the bytes Arrow's writer makes of build()'s table, whatever the columns, repeats, batches and memory", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(fc.integer({ min: 0, max: 40 }), { minLength: 1, maxLength: 50 }), { minLength: 1, maxLength: 4 }),
        fc.uniqueArray(fc.constantFrom<ColumnKind>('i32', 'u16', 'f64', 'f32', 's', 'b'), { maxLength: 4 }),
        fc.option(fc.constantFrom<ColumnKind>('i32', 's', 'f64'), { nil: null }),
        fc.boolean(),
        async (gens, kinds, nulls, split) => {
          const nullsIn = nulls !== null && kinds.includes(nulls) ? nulls : null;
          const acc = new NewestRowPerKey('id', gens.length);
          gens.forEach((keys, i) => acc.add(generation(keys, i + 1, kinds, nullsIn, split)));
          const built = acc.build()!;
          const want = (await finishedBytes(await encodeIpcFilePending(built))) as Buffer;
          const got = (await acc.encodeYielding(dirty))!;
          expect(got.rows).toBe(built.numRows);
          // Columns with nulls or of other types are gathered by Arrow's builders, then encoded.
          if (nullsIn === null && !kinds.includes('b')) expect(got.gathered).toBe('into the file');
          expect(Buffer.compare((await finishedBytes(got.pending)) as Buffer, want)).toBe(0);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('a large merge gathered across slices decodes to the newest row of every key', async () => {
    const n = 70_000;
    const acc = new NewestRowPerKey('id', 3);
    const kinds: ColumnKind[] = ['s', 'f64', 'i32'];
    const keys = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);
    acc.add(generation(keys(0, n), 1, kinds, null, true));
    acc.add(generation(keys(n / 2, n), 2, kinds, null, false));
    acc.add(generation(keys(n - 5, 10), 3, kinds, null, false));
    const got = (await acc.encodeYielding(dirty))!;
    expect(got.gathered).toBe('into the file');
    const table = decodeOwnIpcFile((await finishedBytes(got.pending)) as Buffer);
    expect(table.numRows).toBe(n + n / 2);
    const newest = new Map<bigint, string>();
    for (const row of table.toArray() as { id: bigint; s: string }[]) newest.set(row.id, row.s);
    expect(newest.size).toBe(n + n / 2);
    expect(newest.get(0n)).toBe(valueOf('s', 0, 1, false));
    expect(newest.get(BigInt(n / 2))).toBe(valueOf('s', n / 2, 2, false));
    expect(newest.get(BigInt(n))).toBe(valueOf('s', n, 3, false));
    expect(newest.get(BigInt(n + n / 2 - 1))).toBe(valueOf('s', n + n / 2 - 1, 2, false));
  });

  it("a dictionary column goes through Arrow's writer, which writes the dictionary too", async () => {
    const dictionaryTable = (ids: number[], tags: string[]) =>
      new arrow.Table({ id: arrow.makeVector(BigInt64Array.from(ids, BigInt)), tag: arrow.vectorFromArray(tags, new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32())) });
    // Distinct keys: every row wins, the source is copied whole. Repeated keys: gathered.
    for (const [table, want] of [
      [dictionaryTable([1, 2, 3], ['a', 'b', 'a']), [[1n, 'a'], [2n, 'b'], [3n, 'a']]],
      [dictionaryTable([1, 2, 1, 3, 2], ['a', 'b', 'c', 'a', 'b']), [[1n, 'c'], [3n, 'a'], [2n, 'b']]],
    ] as const) {
      const acc = new NewestRowPerKey('id');
      acc.add(table);
      const got = (await acc.encodeYielding(dirty))!;
      expect(got.gathered).toBe('then encoded');
      const decoded = decodeOwnIpcFile((await finishedBytes(got.pending)) as Buffer);
      // Each key's last row, in the order the rows came.
      expect(decoded.toArray().map((r: { id: bigint; tag: string }) => [r.id, r.tag])).toEqual(want);
    }
  });

  it('nothing fed: nothing to encode', async () => {
    expect(await new NewestRowPerKey('id').encodeYielding(dirty)).toBeNull();
  });
});
