import type { ArrowTable } from '../src/storage/arrow';

// Prepared batches this worker produced, kept in memory until their commit takes them,
// so a commit that runs on the same worker as its preparation (the common case: one
// task queue) does not read, checksum and decode the batch again inside the turn.
// Only a shortcut: the file on disk stays the source of truth, and a commit on another
// worker, or after an eviction or a restart, reads it. Safe because a prepared batch's
// content is a pure function of its immutable generations (same path, same rows).

export class PreparedCache {
  private readonly entries = new Map<string, { table: ArrowTable; bytes: number }>();
  private held = 0;

  constructor(private readonly maxBytes: number) {}

  put(path: string, table: ArrowTable, bytes: number): void {
    if (bytes > this.maxBytes) return;
    this.take(path);
    this.entries.set(path, { table, bytes });
    this.held += bytes;
    // Oldest first: a batch waiting longest for its turn is the one least likely to be
    // committed here soon (it may already be running elsewhere).
    for (const [p, e] of this.entries) {
      if (this.held <= this.maxBytes) break;
      this.entries.delete(p);
      this.held -= e.bytes;
    }
  }

  /** The batch, removed from the cache; undefined when it is not held here. */
  take(path: string): ArrowTable | undefined {
    const e = this.entries.get(path);
    if (!e) return undefined;
    this.entries.delete(path);
    this.held -= e.bytes;
    return e.table;
  }

  get bytesHeld(): number {
    return this.held;
  }
}
