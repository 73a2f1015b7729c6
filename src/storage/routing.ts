// Which shard a key belongs to. A key must always land in the same shard: merges
// order rows by their shard's seq, which is only a total order per key if every
// version of a key went through one shard.
//
// Rendezvous (highest random weight) hashing: the owner is the shard with the highest
// hash(shard, key). It does not depend on the order of `shards`, and adding a shard
// moves only the keys the new shard wins.

import { fmix32 as importedFmix32, fnv, FNV_OFFSET, FNV_PRIME as IMPORTED_FNV_PRIME } from '../util/hash32';

// Bound once here: run through tsx or any esbuild CommonJS output, every use of an
// imported binding is a getter call on the other module's exports, and in the loop
// below (every code unit of every key of a seal) that made a 150k-row seal's routing
// check 70 ms instead of ~15.
const fmix32 = importedFmix32;
const FNV_PRIME = IMPORTED_FNV_PRIME;

export type Key = string | number | bigint;

/** Canonical text of a key: 5, 5n and "5" are the same key (Int64 columns read back as bigint). */
export function canonicalKey(key: Key): string {
  if (typeof key === 'number') {
    if (!Number.isFinite(key)) throw new Error(`key ${key} is not a finite number`);
    // Integers print in full decimal (1e21 as 1000000000000000000000, as an Int64 would).
    if (!Number.isInteger(key)) return String(key);
    return Number.isSafeInteger(key) ? String(key) : BigInt(key).toString();
  }
  if (typeof key !== 'bigint') return key;
  // Same decimal text; V8 prints a safe-integer Number several times faster than a BigInt.
  return key >= -MAX_SAFE && key <= MAX_SAFE ? String(Number(key)) : key.toString();
}
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

// FNV-1a, 32 bit, over UTF-16 code units of `${shard}\u0000${key}`, finished with a
// murmur3 mix so that keys differing only in their last character still spread over all
// shards. The FNV state after each shard's prefix is computed once per shard set, so a
// key costs one pass over its own text per shard and no string building (the seal
// checks every row's owner: for 100k keys this was a large part of a seal's CPU).

/** The owner function of one shard set: call it once, use it for many keys. */
export function shardRouter(shards: readonly string[]): (key: Key) => string {
  const h = keyHasher(shards);
  return (key) => shards[ownerOfText(h, canonicalKey(key))] as string;
}

/** One shard set's hashing state: the FNV state after each shard's prefix, computed once. */
export interface KeyHasher {
  readonly shards: readonly string[];
  readonly prefixes: Int32Array;
}

export function keyHasher(shards: readonly string[]): KeyHasher {
  if (shards.length === 0) throw new Error('shardOfKey: the table has no shards');
  return { shards, prefixes: Int32Array.from(shards, (shard) => fnv(FNV_OFFSET, `${shard}\u0000`)) };
}

/**
 * The owner (an index into `h.shards`) of a key given as the UTF-16 code units of its
 * canonical text. One module-level function, not a closure per shard set: a seal's loop
 * (route-column.ts) that called a new closure each seal was optimised for the previous
 * seal's closure and deoptimised ("wrong call target") on every seal's first row, so
 * each of a writer's first seals ran its 100k-row check unoptimised (37 ms, then 6).
 */
export function ownerOfCodes(h: KeyHasher, codes: Uint16Array, from: number, to: number): number {
  const { prefixes, shards } = h;
  // Two shards, the common case: both hashes in one pass over the key (a 100k-row
  // seal's check 4.8 -> 3.6 ms, measured), the same rule as the loop below.
  if (prefixes.length === 2) {
    let h0 = prefixes[0] as number;
    let h1 = prefixes[1] as number;
    for (let i = from; i < to; i++) {
      const c = codes[i] as number;
      h0 = Math.imul(h0 ^ c, FNV_PRIME);
      h1 = Math.imul(h1 ^ c, FNV_PRIME);
    }
    const s0 = fmix32(h0);
    const s1 = fmix32(h1);
    return s1 > s0 || (s1 === s0 && (shards[1] as string) < (shards[0] as string)) ? 1 : 0;
  }
  let at = 0;
  let bestScore = -1;
  for (let j = 0; j < prefixes.length; j++) {
    let hash = prefixes[j] as number;
    for (let i = from; i < to; i++) hash = Math.imul(hash ^ (codes[i] as number), FNV_PRIME);
    const score = fmix32(hash);
    // Ties (rare) go to the lexicographically smaller name so the order of `shards` never matters.
    if (score > bestScore || (score === bestScore && (shards[j] as string) < (shards[at] as string))) {
      at = j;
      bestScore = score;
    }
  }
  return at;
}

let textUnits = new Uint16Array(64);

/** The owner (an index into `h.shards`) of a key's canonical text. */
export function ownerOfText(h: KeyHasher, text: string): number {
  if (text.length > textUnits.length) textUnits = new Uint16Array(text.length * 2);
  for (let i = 0; i < text.length; i++) textUnits[i] = text.charCodeAt(i);
  return ownerOfCodes(h, textUnits, 0, text.length);
}

export function shardOfKey(key: Key, shards: readonly string[]): string {
  return shardRouter(shards)(key);
}
