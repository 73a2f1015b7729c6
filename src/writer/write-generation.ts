import type { ArrowTable } from '../storage/arrow';
import { sealInto, type SealResult } from '../storage/generation-store';
import type { Row } from '../storage/records';
import type { TableHandle } from '../storage/table-handle';
import { OverBacklogError } from './errors';
import { sleep } from '../util/sleep';

// Seal one generation while honouring the table's write pressure. The Temporal side
// (signal-with-start of the demand event) is the caller's `signal` callback, so this
// module stays usable without a server.

export interface WritePressure {
  writePressure: number;
  backlog: number;
  hardBacklog: number;
  maxWriteDelayMs: number;
}

/** The demand event a seal produces; the table workflow folds it (monotone, idempotent). */
export interface Demand {
  shard: string;
  sealedThroughSeq: number;
  revision: number;
  /** Size of that generation's file (a small one merges without a preparation activity). */
  bytes?: number;
}

export interface WriteGenerationOptions {
  /** The table, opened once by the writer (table-handle.ts). */
  table: TableHandle;
  shard: string;
  rows: ArrowTable | readonly Row[];
  /** Pressure last published by the table; absent = no delay, no refusal. */
  pressure?: WritePressure;
  /** Sends the demand; may answer with fresh pressure for the writer's next seal. */
  signal?: (demand: Demand) => Promise<WritePressure | void>;
  /** Injected in tests. */
  sleep?: (ms: number) => Promise<void>;
}

export interface WriteGenerationResult extends SealResult {
  delayedMs: number;
  /** What `signal` answered, for the next write. */
  pressure?: WritePressure;
  /**
   * The seal is durable even when the signal failed (the table's periodic snapshot
   * will find it), so a failed signal is reported here instead of thrown: throwing
   * would invite a retry that seals the rows a second time.
   */
  signalError?: string;
}

/** writePressure * maxWriteDelayMs, with the pressure clamped to [0, 1]. */
export function writeDelayMs(p: WritePressure): number {
  const pressure = Number.isFinite(p.writePressure) ? Math.min(1, Math.max(0, p.writePressure)) : 0;
  return Math.round(pressure * Math.max(0, p.maxWriteDelayMs));
}

export async function writeGeneration(opts: WriteGenerationOptions): Promise<WriteGenerationResult> {
  let delayedMs = 0;
  if (opts.pressure) {
    if (opts.pressure.backlog >= opts.pressure.hardBacklog) {
      throw new OverBacklogError(opts.table.name, opts.pressure.backlog, opts.pressure.hardBacklog);
    }
    delayedMs = writeDelayMs(opts.pressure);
    if (delayedMs > 0) await (opts.sleep ?? sleep)(delayedMs);
  }
  const sealed = await sealInto(opts.table, opts.shard, opts.rows);
  const result: WriteGenerationResult = { ...sealed, delayedMs };
  if (opts.signal) {
    try {
      const answer = await opts.signal({ shard: opts.shard, sealedThroughSeq: sealed.seq, revision: sealed.revision, bytes: sealed.bytes });
      if (answer) result.pressure = answer;
    } catch (err) {
      result.signalError = err instanceof Error ? err.message : String(err);
    }
  }
  return result;
}
