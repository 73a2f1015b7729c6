import { decodeOwnIpcFile, type ArrowTable } from '../src/storage/arrow';
import { giveBackCarried } from '../src/storage/scratch';

// Prepared batches this worker produced, kept in memory until their commit takes them,
// so a commit that runs on the same worker as its preparation (the common case: one
// task queue) does not read, checksum and decode the batch again inside the turn.
// Only a shortcut: the file on disk stays the source of truth, and a commit on another
// worker, or after an eviction or a restart, reads it. Safe because a prepared batch's
// content is a pure function of its immutable generations (same path, same rows).
//
// What is kept is the batch's IPC file bytes, exactly as written (or, for a generation
// that is its own batch, as read): the commit hands them to Lance as they are, instead
// of encoding the table once more inside the turn (13-85 ms per 100k-300k rows,
// bench/README.md), and decodes its table view from them (no copy).

export interface CachedBatch {
  table: ArrowTable;
  /** The batch as one Arrow IPC file: what Lance is given when it is a commit's only batch. */
  ipc: Buffer;
}

export class PreparedCache {
  private readonly entries = new Map<string, Buffer>();
  private held = 0;

  constructor(private readonly maxBytes: number) {}

  put(path: string, ipc: Buffer): void {
    if (ipc.byteLength > this.maxBytes) return;
    this.take(path);
    this.entries.set(path, ipc);
    this.held += ipc.byteLength;
    // Oldest first: a batch waiting longest for its turn is the one least likely to be
    // committed here soon (it may already be running elsewhere).
    for (const [p, b] of this.entries) {
      if (this.held <= this.maxBytes) break;
      this.entries.delete(p);
      this.held -= b.byteLength;
      giveBackCarried(b); // nothing else holds a batch's bytes
    }
  }

  /** The batch, removed from the cache; undefined when it is not held here. */
  take(path: string): CachedBatch | undefined {
    const ipc = this.entries.get(path);
    if (!ipc) return undefined;
    this.entries.delete(path);
    this.held -= ipc.byteLength;
    return { table: decodeOwnIpcFile(ipc), ipc };
  }

  get bytesHeld(): number {
    return this.held;
  }
}
