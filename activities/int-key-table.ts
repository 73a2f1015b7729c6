// An open-addressing hash table from 64-bit integer keys to the position of their
// newest row, in typed arrays. Dedup of a merge touches every row of every generation;
// a JS Map costs ~0.9 us per row there and allocates a BigInt per Int64 key read, which
// kept the worker's event loop (and with it the workflow tasks of every table on that
// worker) busy for hundreds of milliseconds per 100k-row generation. Keys are read as
// two Int32 halves straight from the column's buffer, so nothing is allocated per row.

import { fmix32 } from '../src/hash32';

const EMPTY = 0;
/** Cells of [slot, lo, hi]: one cache line per probe instead of one per array. */
const STRIDE = 3;

export class IntKeyTable {
  private mask: number;
  /** Per cell: 1 + index into picks (0 = empty), then the key's lo and hi halves. */
  private cells: Int32Array;
  /** Winning row per key, in order of the key's first appearance (as Map iteration would be). */
  private picksArr: Float64Array;
  size = 0;

  constructor(expected = 1024) {
    let cap = 16;
    while (cap < expected * 2) cap *= 2;
    this.mask = cap - 1;
    this.cells = new Int32Array(cap * STRIDE);
    this.picksArr = new Float64Array(Math.max(16, expected));
  }

  get picks(): Float64Array {
    return this.picksArr.subarray(0, this.size);
  }

  /** Sets the key's winner to `pick` (later calls win). */
  set(lo: number, hi: number, pick: number): void {
    const cells = this.cells;
    let h = hash(lo, hi) & this.mask;
    for (;;) {
      const c = h * STRIDE;
      const s = cells[c] as number;
      if (s === EMPTY) break;
      if (cells[c + 1] === lo && cells[c + 2] === hi) {
        this.picksArr[s - 1] = pick;
        return;
      }
      h = (h + 1) & this.mask;
    }
    if (this.size === this.picksArr.length) {
      const grown = new Float64Array(this.picksArr.length * 2);
      grown.set(this.picksArr);
      this.picksArr = grown;
    }
    this.picksArr[this.size] = pick;
    this.size++;
    const c = h * STRIDE;
    cells[c] = this.size;
    cells[c + 1] = lo;
    cells[c + 2] = hi;
    if (this.size * 2 > this.mask + 1) this.rehash();
  }

  private rehash(): void {
    const old = this.cells;
    const cap = (this.mask + 1) * 2;
    this.mask = cap - 1;
    const cells = new Int32Array(cap * STRIDE);
    for (let i = 0; i < old.length; i += STRIDE) {
      const s = old[i] as number;
      if (s === EMPTY) continue;
      const lo = old[i + 1] as number;
      const hi = old[i + 2] as number;
      let h = hash(lo, hi) & this.mask;
      while (cells[h * STRIDE] !== EMPTY) h = (h + 1) & this.mask;
      const c = h * STRIDE;
      cells[c] = s;
      cells[c + 1] = lo;
      cells[c + 2] = hi;
    }
    this.cells = cells;
  }
}

/** murmur3's 32-bit finaliser over both halves: consecutive keys spread over the table. */
const hash = (lo: number, hi: number): number => fmix32(lo ^ Math.imul(hi, 0x9e3779b1));
