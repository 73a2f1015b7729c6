import type { ShardWatermark } from '../policy/store-sweep';
import { readShardSealed } from '../storage/generation-store';
import { shardDir } from '../storage/layout';
import { tableFiles } from '../storage/table-files';
import { listTableFiles, readTableMetaIn } from '../storage/table-meta';

// Every table's shard watermarks, read for the store sweep (store-sweeper.ts) without
// reading what has not changed since the last sweep of this process. A shard's
// sealed-through seq is a function of its directory's entries (generation files,
// SEALED.json and GC.json are all created by link or rename), so where the backend
// records when those entries last changed (a filesystem directory's mtime), a shard
// whose directory has not changed keeps the seq read before: one stat instead of two
// reads and a stat. A table's shards come from its table.json, read again only when
// the file's size or mtime moved. On S3 every shard is read each time.
//
// A time is trusted only once it is SETTLE_MS older than the read that recorded it: a
// change in the same tick of the filesystem's clock as the one before it would leave
// the mtime as it was, but not one that comes seconds later.

/** Tables read at once: a sweep is many small reads. */
const READ_CONCURRENCY = 16;

/** How much older than its read a recorded time must be to be trusted unchanged. */
export const SETTLE_MS = 2000;

interface Known {
  /** The mtime (or table.json's size and mtime) read, when it was SETTLE_MS old at the read; otherwise null. */
  settled: string | null;
}

interface KnownTable extends Known {
  shards: string[];
}

interface KnownShard extends Known {
  seq: number;
}

export interface WatermarkReads {
  /** Shards whose seq was read from the store (the rest were unchanged). */
  shardsRead: number;
  shardsKept: number;
}

export class StoreWatermarks {
  private tables = new Map<string, KnownTable>();
  private shards = new Map<string, KnownShard>();
  /** What the last read() read and kept: its cost, for the tests and the bench. */
  last: WatermarkReads = { shardsRead: 0, shardsKept: 0 };

  constructor(private readonly root: string) {}

  /** Table -> its shards' sealed-through seqs; a table dropped or half-created while read is left out. */
  async read(): Promise<Record<string, ShardWatermark[]>> {
    // Taken before the stats: a time is trusted only if it was old when it was read.
    const listedAt = Date.now();
    const listed = await listTableFiles(this.root);
    const tables = new Map<string, KnownTable>();
    const shards = new Map<string, KnownShard>();
    const reads: WatermarkReads = { shardsRead: 0, shardsKept: 0 };
    const out: Record<string, ShardWatermark[]> = {};
    for (let i = 0; i < listed.length; i += READ_CONCURRENCY) {
      await Promise.all(
        listed.slice(i, i + READ_CONCURRENCY).map(async (t) => {
          try {
            const files = tableFiles(this.root, t.name);
            const stamp = settledStamp(`${t.size}:${t.mtimeMs}`, t.mtimeMs, listedAt);
            const was = this.tables.get(t.name);
            const names = was && stamp !== null && was.settled === stamp ? was.shards : (await readTableMetaIn(files)).shards;
            tables.set(t.name, { settled: stamp, shards: names });
            out[t.name] = await Promise.all(
              names.map(async (shard) => {
                const dir = shardDir(files.layout, shard);
                const readAt = Date.now();
                const changedMs = await files.storage.entriesChangedMs(dir);
                const settled = changedMs === null ? null : settledStamp(String(changedMs), changedMs, readAt);
                const known = this.shards.get(dir);
                let seq: number;
                if (known && settled !== null && known.settled === settled) {
                  seq = known.seq;
                  reads.shardsKept++;
                } else {
                  seq = (await readShardSealed(files, shard)).sealedThroughSeq;
                  reads.shardsRead++;
                }
                shards.set(dir, { settled, seq });
                return { shard, sealedThroughSeq: seq };
              }),
            );
          } catch {
            // dropped or half-created while listed: the next sweep sees it as it is then
          }
        }),
      );
    }
    this.tables = tables;
    this.shards = shards;
    this.last = reads;
    return out;
  }
}

/** `stamp` when the time it names was SETTLE_MS old at `readAtMs`, else null (never trusted unchanged). */
const settledStamp = (stamp: string, timeMs: number, readAtMs: number): string | null => (readAtMs - timeMs >= SETTLE_MS ? stamp : null);
