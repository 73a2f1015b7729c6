import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { arrow, readIpcFile, writeIpcFileAtomic } from '../../src/storage/arrow';
import { TEMP_MARKER } from '../../src/storage/layout';
import fc from 'fast-check';
import { fmix32 } from '../../src/util/hash32';
import { shardOfKey, shardRouter } from '../../src/storage/routing';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-arrow-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('arrow helpers', () => {
  it('is the same Arrow instance lancedb uses', async () => {
    const { makeArrowTable } = await import('@lancedb/lancedb');
    expect(makeArrowTable([{ id: 1 }])).toBeInstanceOf(arrow.Table);
  });

  it('writes atomically (no temp left) and reads back', async () => {
    const file = path.join(dir, 'a.arrow');
    const t = arrow.tableFromArrays({ id: Int32Array.from([1, 2, 3]) });
    const { bytes } = await writeIpcFileAtomic(file, t);
    expect(fs.statSync(file).size).toBe(bytes);
    expect(fs.readdirSync(dir).filter((f) => f.includes(TEMP_MARKER))).toEqual([]);
    expect([...(await readIpcFile(file)).getChild('id')!.toArray()]).toEqual([1, 2, 3]);
  });

  it('names the file when it is truncated or garbage', async () => {
    const file = path.join(dir, 'a.arrow');
    await writeIpcFileAtomic(file, arrow.tableFromArrays({ id: Int32Array.from([1, 2, 3]) }));
    const full = fs.readFileSync(file);
    fs.writeFileSync(file, full.subarray(0, full.length - 20));
    await expect(readIpcFile(file)).rejects.toThrow(`${file}: not a readable Arrow IPC file (no trailing ARROW1 magic: truncated)`);
    fs.writeFileSync(file, 'garbage garbage garbage');
    await expect(readIpcFile(file)).rejects.toThrow(file);
  });
});

describe('routing', () => {
  const shards = ['s0', 's1', 's2', 's3'];
  it('is stable, order-independent and treats 5, 5n and "5" alike', () => {
    for (let k = 0; k < 200; k++) {
      const s = shardOfKey(k, shards);
      expect(shardOfKey(BigInt(k), shards)).toBe(s);
      expect(shardOfKey(String(k), [...shards].reverse())).toBe(s);
    }
  });
  it('owns every kind of key as it always has (pinned: sealed data depends on it)', () => {
    // Owners computed by the router as of commit a12734c; any change here moves
    // keys of existing tables to other shards.
    const keys: (number | string | bigint)[] = [0, 1, 2, 7, 42, -1, -42, 999_999, 2147483647, -2147483648, 2147483648, 4294967296, 9007199254740991, -9007199254740991, 12345678901234567890n, -9223372036854775808n, 'a', 'key-17', 'ümlaut', '', 'x'.repeat(100)];
    const pinned: [string[], string][] = [
      [['s0', 's1'], 's1 s0 s0 s1 s1 s1 s1 s1 s0 s1 s1 s0 s1 s1 s0 s1 s0 s0 s1 s0 s1'],
      [['s0', 's1', 's2', 's3'], 's1 s0 s2 s2 s1 s3 s2 s1 s0 s2 s2 s0 s1 s1 s0 s2 s3 s2 s3 s2 s1'],
      [['east', 'west', 'north'], 'north west east west north west west west north east west west west west east north east east east east east'],
    ];
    for (const [set, owners] of pinned) expect(keys.map((k) => shardOfKey(k, set)).join(' ')).toBe(owners);
  });
  it('spreads keys over every shard', () => {
    const counts = new Map<string, number>();
    for (let k = 0; k < 4000; k++) counts.set(shardOfKey(k, shards), (counts.get(shardOfKey(k, shards)) ?? 0) + 1);
    for (const s of shards) expect(counts.get(s)).toBeGreaterThan(800);
  });
});

// The routing of existing tables must never change: the router (prefix states computed
// once per shard set) against the straightforward definition it replaced.
function referenceOwner(key: string | number | bigint, shards: readonly string[]): string {
  const k = typeof key === 'number' ? (Number.isInteger(key) ? BigInt(key).toString() : String(key)) : typeof key === 'bigint' ? key.toString() : key;
  const hash32 = (text: string) => {
    let h = 0x811c9dc5;
    for (let i = 0; i < text.length; i++) {
      h ^= text.charCodeAt(i);
      h = Math.imul(h, 0x01000193);
    }
    return fmix32(h);
  };
  let best = shards[0]!;
  let bestScore = -1;
  for (const shard of shards) {
    const score = hash32(`${shard}\u0000${k}`);
    if (score > bestScore || (score === bestScore && shard < best)) {
      best = shard;
      bestScore = score;
    }
  }
  return best;
}

describe('shardRouter', () => {
  it('gives every key the owner the reference definition gives it', () => {
    const key = fc.oneof(fc.integer(), fc.maxSafeInteger(), fc.constantFrom(-0, 2 ** 53, -(2 ** 53), 1e21, 2 ** 63), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.string({ unit: 'binary' }), fc.double({ noNaN: true, noDefaultInfinity: true }));
    const shardSet = fc.uniqueArray(fc.string({ minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 9 });
    fc.assert(
      fc.property(shardSet, fc.array(key, { minLength: 1, maxLength: 40 }), (shards, keys) => {
        const ownerOf = shardRouter(shards);
        for (const k of keys) expect(ownerOf(k)).toBe(referenceOwner(k, shards));
      }),
      { numRuns: 300 },
    );
  });
});

