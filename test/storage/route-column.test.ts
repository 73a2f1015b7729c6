import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { arrow, type Vector } from '../../src/storage/arrow';
import { firstMisrouted } from '../../src/storage/route-column';
import { shardOfKey, type Key } from '../../src/storage/routing';

// The column scan must name exactly the row the per-key router names first, for every
// key type it has a fast path for and for those it hands to the generic path.

const shardSets = fc.uniqueArray(fc.stringMatching(/^[a-z0-9]{1,6}$/), { minLength: 2, maxLength: 6 });

function expected(keys: readonly Key[], shards: string[], shard: string): { index: number; owner: string } | null {
  for (let i = 0; i < keys.length; i++) {
    const owner = shardOfKey(keys[i]!, shards);
    if (owner !== shard) return { index: i, owner };
  }
  return null;
}

function check(vector: Vector, keys: readonly Key[], shards: string[]): void {
  for (const shard of shards) {
    const want = expected(keys, shards, shard);
    const got = firstMisrouted(vector, shards, shard);
    expect(got ? { index: got.index, owner: got.owner } : null).toEqual(want);
  }
}

/** Keys all owned by one shard except, maybe, one planted elsewhere: the interesting case. */
function ownedBy<T extends Key>(pool: T[], shards: string[]): T[] {
  const s = shardOfKey(pool[0]!, shards);
  const mine = pool.filter((k) => shardOfKey(k, shards) === s);
  const other = pool.find((k) => shardOfKey(k, shards) !== s);
  return other === undefined ? mine : [...mine, other, ...mine.slice(0, 3)];
}

describe('firstMisrouted', () => {
  it('agrees with shardOfKey on Int64 keys, including beyond 2^53 and negatives', () => {
    const big = fc.oneof(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.bigInt({ min: -(2n ** 54n), max: 2n ** 54n }), fc.bigInt({ min: -1000n, max: 1000n }));
    fc.assert(
      fc.property(fc.array(big, { minLength: 1, maxLength: 60 }), shardSets, (pool, shards) => {
        const keys = ownedBy(pool, shards);
        check(arrow.makeVector(BigInt64Array.from(keys)), keys, shards);
      }),
    );
  });

  it('agrees on Int32, Uint8 and Uint64 keys', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), { minLength: 1, maxLength: 60 }), shardSets, (pool, shards) => {
        const keys = ownedBy(pool, shards);
        check(arrow.makeVector(Int32Array.from(keys)), keys, shards);
        const bytes = keys.map((k) => k & 0xff);
        check(arrow.makeVector(Uint8Array.from(bytes)), bytes, shards);
        const u64 = keys.map((k) => BigInt(k >>> 0) * 4294967296n + 7n);
        check(arrow.makeVector(BigUint64Array.from(u64)), u64, shards);
      }),
    );
  });

  it('agrees on string keys, ASCII or not, over several chunks and slices', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.string({ maxLength: 8 }), fc.string({ unit: 'grapheme', maxLength: 4 })), { minLength: 2, maxLength: 60 }), shardSets, (pool, shards) => {
        const keys = ownedBy(pool, shards);
        const half = Math.floor(keys.length / 2);
        const vector = arrow.vectorFromArray(keys.slice(0, half), new arrow.Utf8()).concat(arrow.vectorFromArray(keys.slice(half), new arrow.Utf8()));
        check(vector, keys, shards);
        const sliced = arrow.vectorFromArray(['x', ...keys, 'y'], new arrow.Utf8()).slice(1, keys.length + 1);
        check(sliced, keys, shards);
      }),
    );
  });

  it('agrees on keys at every decimal length and at the 2^31, 2^32 and 2^53 edges (the digit groups)', () => {
    const edges: bigint[] = [0n, 2n ** 31n, 2n ** 32n, 2n ** 53n - 1n];
    for (let p = 1n; p <= 10n ** 16n; p *= 10n) edges.push(p, p * 9999n);
    const keys = [...new Set(edges.flatMap((e) => [e - 1n, e, e + 1n]).flatMap((k) => [k, -k]))].filter((k) => k >= -(2n ** 63n) && k < 2n ** 63n);
    // Each key alone: a wrong digit changes only its own owner, which a longer column
    // would hide behind an earlier misrouted row.
    fc.assert(
      fc.property(shardSets, (shards) => {
        for (const k of keys) {
          check(arrow.makeVector(BigInt64Array.of(k)), [k], shards);
          if (k >= -(2n ** 31n) && k < 2n ** 31n) check(arrow.makeVector(Int32Array.of(Number(k))), [Number(k)], shards);
        }
      }),
      { numRuns: 40 },
    );
  });

  it('names the key and its owner for the seal error', () => {
    const shards = ['a', 'b', 'c'];
    const keys = Array.from({ length: 50 }, (_, i) => BigInt(i));
    const firstForeign = keys.findIndex((k) => shardOfKey(k, shards) !== 'a');
    const got = firstMisrouted(arrow.makeVector(BigInt64Array.from(keys)), shards, 'a');
    expect(got).toEqual({ index: firstForeign, key: keys[firstForeign], owner: shardOfKey(keys[firstForeign]!, shards) });
  });
});
