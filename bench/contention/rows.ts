import fs from 'node:fs';
import { arrow, type ArrowTable } from '../../src/storage/arrow';
import { mulberry32 } from '../../src/util/mulberry32';
import { KEY, type PayloadCheck, type WriterModel } from '../../test/support/outside-table';

// What the contention bench's processes share: the row shape (a vector payload), a
// seeded random source and the writers' log lines. The key scheme, the writer's model
// and the check of a table against the models are the outside writer's of the tests
// (test/support/outside-table.ts).

export const VALUE_DIM = 24; // 24 float32: a 96-byte payload, as the bench's rows are meant to be ~100 bytes

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

/** These rows' payload as the check of a table against the models reads it: its first and last element. */
export const VECTOR_PAYLOAD: PayloadCheck = {
  column: 'value',
  matches: (v, key, seq) => v !== null && [0, VALUE_DIM - 1].every((j) => (v as { get(j: number): number }).get(j) === payload(key, seq, j)),
};

/** The same sequence for the same seed in every process. */
export const rng = mulberry32;

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
