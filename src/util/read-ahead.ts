/**
 * Reads of the seqs from..to, taken in order, with up to `depth` started ahead of the one
 * taken: on an object store each read is a round trip, and reading one generation after
 * another left a preparation waiting on them for most of its time. A read that fails
 * fails where its seq is taken; settle() waits for every read started, so none is still
 * writing into memory its caller has given back.
 */
export class ReadAhead<T> {
  private readonly started = new Map<number, Promise<T>>();
  private next: number;
  private expected: number;

  constructor(
    from: number,
    private readonly to: number,
    private readonly depth: number,
    private readonly read: (seq: number) => Promise<T>,
  ) {
    this.next = from;
    this.expected = from;
  }

  /** The read of `seq`, the next seq in order; starts the reads after it, up to depth ahead. */
  take(seq: number): Promise<T> {
    if (seq !== this.expected || seq > this.to) throw new Error(`read-ahead: seq ${seq} taken out of order (expected ${this.expected}, last ${this.to})`);
    this.expected++;
    while (this.next <= Math.min(this.to, seq + this.depth)) {
      const s = this.next++;
      const p = this.read(s);
      // Surfaced where it is taken; until then it must not count as unhandled.
      p.catch(() => undefined);
      this.started.set(s, p);
    }
    const p = this.started.get(seq)!;
    this.started.delete(seq);
    return p;
  }

  /** Waits for every read started and not taken (their results and errors are dropped). */
  async settle(): Promise<void> {
    const left = [...this.started.values()];
    this.started.clear();
    await Promise.allSettled(left);
  }
}
