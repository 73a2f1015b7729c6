// Which shard a key belongs to. A key must always land in the same shard: merges
// order rows by their shard's seq, which is only a total order per key if every
// version of a key went through one shard.
//
// Rendezvous (highest random weight) hashing: the owner is the shard with the highest
// hash(shard, key). It does not depend on the order of `shards`, and adding a shard
// moves only the keys the new shard wins.

import { fmix32 } from '../fmix32';

export type Key = string | number | bigint;

/** Canonical text of a key: 5, 5n and "5" are the same key (Int64 columns read back as bigint). */
export function canonicalKey(key: Key): string {
  if (typeof key === 'number') {
    if (!Number.isFinite(key)) throw new Error(`key ${key} is not a finite number`);
    return Number.isInteger(key) ? BigInt(key).toString() : String(key);
  }
  return typeof key === 'bigint' ? key.toString() : key;
}

// FNV-1a, 32 bit, over UTF-16 code units, finished with a murmur3 mix so that keys
// differing only in their last character still spread over all shards.
function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return fmix32(h);
}

export function shardOfKey(key: Key, shards: readonly string[]): string {
  if (shards.length === 0) throw new Error('shardOfKey: the table has no shards');
  const k = canonicalKey(key);
  let best = shards[0] as string;
  let bestScore = -1;
  for (const shard of shards) {
    const score = hash32(`${shard}\u0000${k}`);
    // Ties (rare) go to the lexicographically smaller name so the order of `shards` never matters.
    if (score > bestScore || (score === bestScore && shard < best)) {
      best = shard;
      bestScore = score;
    }
  }
  return best;
}
