import type { IndexSpec } from '../messages/index-spec';

// What each kind's preparation hands to its commit: produced by the activities
// (activities/contract.ts), carried without being read by the core's units
// (src/policy/types.ts, PreparedOf), handed back to the commit by the shell
// (workflows/run-unit.ts). Plain JSON.

export interface PreparedMerge {
  shard: string;
  fromSeq: number;
  toSeq: number;
  /** Path of the prepared Arrow IPC batch (newest row per key), null when empty. */
  preparedPath: string | null;
  rows: number;
  bytes: number;
  /** Temporal attempt that produced it (1 = no retry). */
  attempt: number;
  /** Generation files a previous attempt had already read, so this one skipped them. */
  resumedFromFile: number;
  /**
   * Where that came from: 'heartbeat' (the previous attempt's last heartbeat named its
   * checkpoint), 'scan' (no usable heartbeat, e.g. the worker died before it reached the
   * server: the newest checkpoint on disk), 'batch' (the whole prepared batch was there).
   */
  resumedVia: 'heartbeat' | 'scan' | 'batch' | null;
  /** Where this attempt's time went (ms), for benchmarks and operators. */
  timings?: PrepareTimings;
  /**
   * The batch bound (generation bytes) of the fleet when it was prepared: the
   * batches committed together in one turn stay within it. Absent without a budget.
   */
  maxBatchBytes?: number;
  /**
   * Not prepared: a single small generation whose commit reads, checks and deduplicates
   * it itself (policy directMergeMaxBytes); preparedPath is null, rows 0, bytes its size.
   */
  direct?: boolean;
}

export interface PrepareTimings {
  /** Reading, checksumming, decoding and validating generation files. */
  readMs: number;
  /** Keeping the newest row per key. */
  dedupeMs: number;
  /** Gathering the winners into the prepared batch's IPC file and writing it. */
  encodeMs: number;
}

export interface OptimizePlan {
  needed: boolean;
  reason: string;
  numFragments: number;
  numSmallFragments: number;
  unindexedRows: number;
  /** Versions older than retentionSecs (0 when planOptimize got no retentionSecs). */
  versionsPastRetention?: number;
}

export interface IndexPlan {
  missing: IndexSpec[];
  /** How many indices table.json configures; absent in results recorded before it was reported. */
  configured?: number;
}

export interface GcPlan {
  files: string[];
  tempFiles: string[];
}

/**
 * What one activity cost, reported with its result (turnstile history, the
 * bytes-rewritten metrics and write amplification). Absent from results of workers that
 * do not measure it.
 */
export interface UnitCost {
  /** Bytes read from storage: generation files, prepared batches, table data files. */
  bytesRead: number;
  /** Bytes written to storage: prepared batches, table data files, index files. */
  bytesWritten: number;
  /** Worker CPU time, shared out among the activities running at the same time. */
  cpuMs: number;
}
