import fs from 'node:fs';
import path from 'node:path';
import * as lancedb from '@lancedb/lancedb';
import { arrow, type ArrowTable } from '../../src/storage/arrow';
import { isS3 } from '../../src/storage/location';
import { lanceStorageOptions } from '../../src/storage/s3-env';
import { mulberry32 } from '../../src/util/mulberry32';

// What the contention bench's processes share: the row shape, the key scheme, a seeded
// random source, and the writer's model (the final state each writer expects to find).

/** Initial rows have keys 0..N-1; writer w (1-based) inserts keys w * KEY_STRIDE + i, so writers never share a key. */
export const KEY_STRIDE = 1_000_000_000;
export const VALUE_DIM = 24; // 24 float32: a 96-byte payload, as the bench's rows are meant to be ~100 bytes

/** The columns: key `id`, writer id (0 = the initial load), the writer's batch number, and the payload. */
export const KEY = 'id';

const fsl = () => new arrow.FixedSizeList(VALUE_DIM, new arrow.Field('item', new arrow.Float32(), true));

/**
 * One batch: every row of it carries the same writer id and seq. The payload is a
 * function of (key, seq), so a row read back can be checked against what was written.
 */
export function makeBatch(keys: readonly number[], writer: number, seq: number): ArrowTable {
  const n = keys.length;
  const ids = new BigInt64Array(n);
  const vals = new Float32Array(n * VALUE_DIM);
  for (let i = 0; i < n; i++) {
    const k = keys[i]!;
    ids[i] = BigInt(k);
    for (let j = 0; j < VALUE_DIM; j++) vals[i * VALUE_DIM + j] = payload(k, seq, j);
  }
  const value = arrow.makeVector(
    arrow.makeData({ type: fsl(), length: n, nullCount: 0, child: arrow.makeData({ type: new arrow.Float32(), length: n * VALUE_DIM, nullCount: 0, data: vals }) }),
  );
  return new arrow.Table({
    [KEY]: arrow.makeVector(ids),
    writer: arrow.makeVector(new Int32Array(n).fill(writer)),
    wseq: arrow.makeVector(new BigInt64Array(n).fill(BigInt(seq))),
    value,
  });
}

/** Element j of a row's payload; exact in float32 (a multiple of 1/1024 below 1). */
export const payload = (key: number, seq: number, j: number): number => ((key * 31 + seq * 17 + j * 7) % 1024) / 1024;

/** The same sequence for the same seed in every process. */
export const rng = mulberry32;

/**
 * What a writer committed: key keyBase + i was last written with seq seqs[i]. A batch
 * that still failed when the writer stopped is `pending`: its keys may hold either
 * their previous seq (or be absent, when new) or the pending one.
 */
export interface WriterModel {
  writer: number;
  keyBase: number;
  seqs: number[];
  pending: { seq: number; keys: number[] } | null;
}

/** A line of a writer's log: one per committed batch, one per failed attempt, and the summary at the end. */
export type WriterLogLine =
  | { type: 'commit'; t: number; ms: number; batchMs: number; seq: number; inserted: number; updated: number; attempts: number }
  | { type: 'failure'; t: number; ms: number; seq: number; error: string }
  | {
      type: 'summary';
      writer: number;
      via: 'lance' | 'turnstile';
      startedAt: number;
      endedAt: number;
      commits: number;
      failures: number;
      rows: number;
      inserted: number;
      updated: number;
      conflictRetries: number;
      p50: number;
      p99: number;
      /** Bytes the process handed to write calls over its life (/proc/self/io wchar), null without /proc. */
      wchar: number | null;
      /** --via turnstile: the highest seq the writer sealed, per shard. */
      lastSeqs?: Record<string, number>;
      model: WriterModel;
    };

/** Where a Lance table directory lives: its database (parent directory) and table name, and how to connect. */
export function splitTableUri(uri: string): { db: string; name: string } {
  const trimmed = uri.replace(/\/+$/, '');
  const base = path.posix.basename(trimmed);
  if (!base.endsWith('.lance')) throw new Error(`--uri: ${JSON.stringify(uri)} is not a Lance table directory (NAME.lance)`);
  return { db: trimmed.slice(0, trimmed.length - base.length - 1), name: base.slice(0, -'.lance'.length) };
}

/** A handle on the table at `uri` that sees every commit at once (readConsistencyInterval 0). */
export async function openTableAt(uri: string): Promise<lancedb.Table> {
  const { db, name } = splitTableUri(uri);
  const conn = await lancedb.connect(db, { readConsistencyInterval: 0, ...(isS3(uri) ? { storageOptions: lanceStorageOptions() } : {}) });
  return conn.openTable(name);
}

/**
 * Bytes a process has handed to write calls so far (wchar of /proc/PID/io): every file
 * it wrote, committed or thrown away, before the page cache; null without /proc.
 */
export function writtenBytes(pid: number | 'self'): number | null {
  try {
    const m = /^wchar: (\d+)$/m.exec(fs.readFileSync(`/proc/${pid}/io`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** Percentile by nearest rank; 0 for no values. */
export function pct(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}
