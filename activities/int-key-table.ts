// Newest row per 64-bit integer key, in typed arrays and in two passes. Dedup of a merge
// touches every row of every generation. One hash table over all of them (what this
// used to be) is as large as the keys: 600k rows of a 4 x 150k merge missed the
// CPU cache on every probe, ~0.3 us a row, while the same probes into a table that fits
// the cache took 13 ms for all 600k. So rows are first appended, in the order fed, to
// the partition that their key's hash picks (a handful of sequential write streams),
// and each partition is then deduplicated on its own in a small table. Keys are read as
// two Int32 halves straight from the column's buffer, so nothing is allocated per row.

import { fmix32 as importedFmix32 } from '../src/util/hash32';

// Bound once: through tsx or esbuild's CommonJS output every call of an imported
// function is a getter call first (src/storage/routing.ts measured it).
const fmix32 = importedFmix32;

/** Rows per partition aimed at: its table (2 cells a row, 4 bytes a cell) stays in L2. */
const PARTITION_ROWS = 4096;
const MAX_BITS = 10;
/** Entries of [lo, hi, source, row]. */
const STRIDE = 4;

/** murmur3's 32-bit finaliser over both halves: consecutive keys spread evenly. */
const hash = (lo: number, hi: number): number => fmix32(lo ^ Math.imul(hi, 0x9e3779b1));

export class PartitionedIntKeys {
  private readonly bits: number;
  private readonly parts: Int32Array[];
  private readonly counts: Int32Array;
  private cells = new Int32Array(0);

  /** `expectedRows`: the rows likely fed in all; it sets the number of partitions (a guess is fine). */
  constructor(expectedRows: number) {
    let bits = 0;
    while (bits < MAX_BITS && expectedRows / 2 ** bits > PARTITION_ROWS) bits++;
    this.bits = bits;
    this.parts = Array.from({ length: 2 ** bits }, () => new Int32Array(0));
    this.counts = new Int32Array(2 ** bits);
  }

  /** Feeds one row; for a key fed more than once the last row fed wins. */
  add(lo: number, hi: number, source: number, row: number): void {
    const p = this.bits === 0 ? 0 : hash(lo, hi) >>> (32 - this.bits);
    let a = this.parts[p] as Int32Array;
    const n = this.counts[p] as number;
    if ((n + 1) * STRIDE > a.length) {
      const grown = new Int32Array(Math.max(64, n * 2) * STRIDE);
      grown.set(a);
      this.parts[p] = a = grown;
    }
    const e = n * STRIDE;
    a[e] = lo;
    a[e + 1] = hi;
    a[e + 2] = source;
    a[e + 3] = row;
    this.counts[p] = n + 1;
  }

  /**
   * Marks keep[source][row] = 1 for the winning row of every key (the arrays start
   * zeroed) and returns how many keys there are, yielding between partitions once
   * about `sliceRows` rows were looked at.
   */
  *markWinners(keep: Uint8Array[], sliceRows: number): Generator<void, number> {
    let keys = 0;
    let sinceYield = 0;
    for (let p = 0; p < this.parts.length; p++) {
      const n = this.counts[p] as number;
      if (n === 0) continue;
      keys += this.markPartition(this.parts[p] as Int32Array, n, keep);
      sinceYield += n;
      if (sinceYield >= sliceRows) {
        sinceYield = 0;
        yield;
      }
    }
    return keys;
  }

  private markPartition(a: Int32Array, n: number, keep: Uint8Array[]): number {
    let cap = 16;
    while (cap < n * 2) cap *= 2;
    if (this.cells.length < cap) this.cells = new Int32Array(cap);
    const cells = this.cells;
    const mask = cap - 1;
    let keys = 0;
    // Cells hold 1 + the entry of the key's newest row; entries come in the order fed.
    for (let i = 0; i < n; i++) {
      const e = i * STRIDE;
      const lo = a[e] as number;
      const hi = a[e + 1] as number;
      let h = hash(lo, hi) & mask;
      for (;;) {
        const c = cells[h] as number;
        if (c === 0) {
          keys++;
          break;
        }
        const o = (c - 1) * STRIDE;
        if (a[o] === lo && a[o + 1] === hi) break;
        h = (h + 1) & mask;
      }
      cells[h] = i + 1;
    }
    for (let h = 0; h < cap; h++) {
      const c = cells[h] as number;
      if (c === 0) continue;
      const o = (c - 1) * STRIDE;
      (keep[a[o + 2] as number] as Uint8Array)[a[o + 3] as number] = 1;
      cells[h] = 0;
    }
    return keys;
  }
}
