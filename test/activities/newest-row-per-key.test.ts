import { describe, expect, it } from 'vitest';
import { NewestRowPerKey } from '../../activities/newest-row-per-key';
import { arrow, type ArrowTable } from '../../src/storage/arrow';
import { tableFromRows, withSeqColumn, type Row } from '../../src/storage/records';

// The gather fast paths (typed arrays, raw UTF-8) and the builder fallback (nulls,
// vectors) must give the same rows, also from multi-batch and sliced sources.

const gen = (rows: Row[], seq: number): ArrowTable => withSeqColumn(tableFromRows(rows, 'id'), seq, 'id');
const ser = (r: Record<string, unknown>): string =>
  JSON.stringify({ ...r }, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v instanceof arrow.Vector ? [...(v as Iterable<unknown>)] : v));
const plain = (t: ArrowTable): string[] => t.toArray().map(ser).sort();

describe('NewestRowPerKey', () => {
  it('keeps the last row per key across multi-batch and sliced sources, with strings, nulls and vectors', () => {
    const a = gen([{ id: 1, s: 'eins', x: 1.5, v: [1, 2] }, { id: 2, s: 'zwei', x: null, v: [3, 4] }, { id: 3, s: 'drei ü', x: 3, v: [5, 6] }], 1);
    const b1 = gen([{ id: 2, s: 'zwei →', x: 22, v: [7, 8] }, { id: 4, s: 'vier', x: null, v: [9, 10] }], 2);
    const b2 = gen([{ id: 9, s: 'neun', x: 9, v: [0, 0] }, { id: 1, s: 'eins 2', x: 11, v: [1, 1] }], 2);
    const multi = new arrow.Table(b1.schema, [...b1.batches, ...b2.batches]);
    expect(multi.batches).toHaveLength(2);
    const sliced = multi.slice(1); // drops id 2 of seq 2
    const acc = new NewestRowPerKey('id');
    acc.add(a);
    acc.add(sliced);
    const out = acc.build()!;
    expect(out.schema.fields.map((f) => [f.name, String(f.type), f.nullable])).toEqual(a.schema.fields.map((f) => [f.name, String(f.type), f.nullable]));
    const want = gen([{ id: 1, s: 'eins 2', x: 11, v: [1, 1] }, { id: 2, s: 'zwei', x: null, v: [3, 4] }, { id: 3, s: 'drei ü', x: 3, v: [5, 6] }, { id: 4, s: 'vier', x: null, v: [9, 10] }, { id: 9, s: 'neun', x: 9, v: [0, 0] }], 0);
    const seqs = new Map([['1', 2n], ['2', 1n], ['3', 1n], ['4', 2n], ['9', 2n]]);
    const expected = want.toArray().map((r: Record<string, unknown>) => ({ ...r, _seq: seqs.get(String(r.id)) }));
    expect(plain(out)).toEqual(expected.map(ser).sort());
  });

  it('gathered into lent scratch memory (not zeroed, reused) it gives the same rows, slice boundaries crossed', async () => {
    const { withScratch } = await import('../../src/storage/scratch');
    // ~40k winners of the first source, gathered: over the 32k rows of one slice.
    const rows = (from: number, n: number, tag: string): Row[] => Array.from({ length: n }, (_, i) => ({ id: from + i, s: `${tag}-${from + i}`, x: (from + i) / 2 }));
    const sources = [gen(rows(0, 50_000, 'a'), 1), gen(rows(40_000, 40_000, 'b'), 2), gen(rows(5, 3, 'c'), 3)];
    const build = async (lend: boolean): Promise<string[]> => {
      const acc = new NewestRowPerKey('id');
      for (const t of sources) acc.add(t);
      if (!lend) return plain((await acc.buildYielding())!);
      return withScratch(async (alloc) => {
        // Memory a previous user left dirty.
        const dirty = (n: number) => alloc(n).fill(0xa5);
        return plain((await acc.buildYielding(dirty))!);
      });
    };
    const want = await build(false);
    expect(want).toHaveLength(80_000);
    expect(await build(true)).toEqual(want);
  });

  it('gathering a column yields every 32k rows, strings and numbers alike, with the same values', async () => {
    const { takeRows } = await import('../../activities/take-rows');
    const t = gen(Array.from({ length: 100_000 }, (_, i) => ({ id: i, s: `v${i}` })), 1);
    const rows = Float64Array.from({ length: 90_000 }, (_, i) => 99_999 - i);
    for (const name of ['id', 's']) {
      const field = t.schema.fields.find((f) => f.name === name)!;
      const it = takeRows(field, t.getChild(name)!, rows);
      let yields = 0;
      let r = it.next();
      for (; !r.done; r = it.next()) yields++;
      expect(yields, name).toBeGreaterThanOrEqual(2); // 90k rows: three slices
      expect(r.value.get(0)).toEqual(t.getChild(name)!.get(99_999));
      expect(r.value.get(89_999)).toEqual(t.getChild(name)!.get(10_000));
    }
  });

  it('string keys and an empty accumulator', () => {
    expect(new NewestRowPerKey('id').build()).toBeNull();
    const acc = new NewestRowPerKey('id');
    acc.add(gen([{ id: 'a', n: 1 }, { id: 'b', n: 2 }, { id: 'a', n: 3 }], 1));
    const out = acc.build()!;
    expect(out.toArray().map((r: Record<string, unknown>) => [r.id, r.n]).sort()).toEqual([['a', 3], ['b', 2]]);
  });
});

describe('NewestRowPerKey on integer keys (typed hash table)', () => {
  it('matches a Map of the last row per key on random Int64 keys, negative and beyond 2^53 included', async () => {
    const fc = (await import('fast-check')).default;
    const key = fc.oneof(fc.bigInt({ min: -50n, max: 50n }), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.constantFrom(2n ** 53n, -(2n ** 53n), 2n ** 32n, -(2n ** 32n), 2n ** 31n, 2n ** 63n - 1n, -(2n ** 63n)));
    fc.assert(
      // expectedSources 1 keeps these few rows in one partition; 10^6 spreads them over all 1,024.
      fc.property(fc.array(fc.array(key, { minLength: 1, maxLength: 60 }), { minLength: 1, maxLength: 5 }), fc.constantFrom(1, 1_000_000), (gens, expectedSources) => {
        const acc = new NewestRowPerKey('id', expectedSources);
        const want = new Map<string, string>();
        gens.forEach((keys, g) => {
          const rows = keys.map((k, i) => ({ id: k, tag: `${g}:${i}` }));
          acc.add(withSeqColumn(tableFromRows(rows, 'id'), g + 1, 'id'));
          for (const r of rows) want.set(String(r.id), r.tag);
        });
        const out = acc.build()!;
        const got = new Map(out.toArray().map((r: Record<string, unknown>) => [String(r.id), String(r.tag)]));
        expect(got).toEqual(want);
        expect(out.numRows).toBe(want.size);
        // _seq is gathered too (as Int32 halves): the winner's generation.
        for (const r of out.toArray() as Record<string, unknown>[]) expect(Number(r._seq)).toBe(Number(String(r.tag).split(':')[0]) + 1);
        expect(acc.single !== null).toBe(gens.length === 1 && new Set(gens[0]!.map(String)).size === gens[0]!.length);
      }),
      { numRuns: 200 },
    );
  });

  it('in slices (addYielding, buildYielding) it keeps exactly the rows add and build keep, across slice boundaries', async () => {
    // 40,000-row generations span three 16,384-row slices; keys repeat within and across them.
    const gen = (g: number) => withSeqColumn(tableFromRows(Array.from({ length: 40_000 }, (_, i) => ({ id: (i * 7919 + g * 13_001) % 50_000, tag: `${g}:${i}` })), 'id'), g + 1, 'id');
    const whole = new NewestRowPerKey('id');
    const sliced = new NewestRowPerKey('id');
    for (const g of [0, 1, 2]) {
      whole.add(gen(g));
      await sliced.addYielding(gen(g));
    }
    const rows = (t: ArrowTable | null) => t!.toArray().map((r: Record<string, unknown>) => `${String(r.id)}|${String(r.tag)}|${String(r._seq)}`);
    const got = rows(await sliced.buildYielding());
    expect(got).toEqual(rows(whole.build()));
    expect(got.length).toBe(50_000);
    expect(sliced.rowsRead).toBe(120_000);
  });

  it('Int32 keys: negatives and large unsigned values stay distinct', () => {
    const t = new arrow.Table({ id: arrow.vectorFromArray([-1, 1, -1, 2147483647, -2147483648], new arrow.Int32()), n: arrow.vectorFromArray([1, 2, 3, 4, 5], new arrow.Float64()) });
    const acc = new NewestRowPerKey('id');
    acc.add(t);
    // Rows in source order (what order the batch has does not matter to a mergeInsert).
    expect(acc.build()!.toArray().map((r: Record<string, unknown>) => [r.id, r.n])).toEqual([[1, 2], [-1, 3], [2147483647, 4], [-2147483648, 5]]);
  });
});
