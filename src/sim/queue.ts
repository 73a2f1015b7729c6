// A binary min-heap of timed items. Ties at the same time keep insertion order, so a
// run is deterministic.

interface Entry<T> {
  atMs: number;
  seq: number;
  item: T;
}

export class TimeQueue<T> {
  private heap: Entry<T>[] = [];
  private seq = 0;

  get size(): number {
    return this.heap.length;
  }

  push(atMs: number, item: T): void {
    this.heap.push({ atMs, seq: this.seq++, item });
    let i = this.heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(i, parent)) break;
      this.swap(i, parent);
      i = parent;
    }
  }

  peekTime(): number | null {
    return this.heap[0]?.atMs ?? null;
  }

  pop(): { atMs: number; item: T } | null {
    const top = this.heap[0];
    if (!top) return null;
    const last = this.heap.pop()!;
    if (this.heap.length > 0) {
      this.heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < this.heap.length && this.less(l, m)) m = l;
        if (r < this.heap.length && this.less(r, m)) m = r;
        if (m === i) break;
        this.swap(i, m);
        i = m;
      }
    }
    return { atMs: top.atMs, item: top.item };
  }

  private less(i: number, j: number): boolean {
    const a = this.heap[i]!;
    const b = this.heap[j]!;
    return a.atMs < b.atMs || (a.atMs === b.atMs && a.seq < b.seq);
  }

  private swap(i: number, j: number): void {
    const t = this.heap[i]!;
    this.heap[i] = this.heap[j]!;
    this.heap[j] = t;
  }
}
