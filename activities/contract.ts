// The activity contract between the table workflow and the workers. Workflows import
// this file only as `import type`; inputs and results are plain JSON (< 512 KiB).

/** Progress details sent as heartbeats; the workflow sees the last one on a timeout. */
export type Progress =
  /** checkpointThroughSeq: the newest checkpoint written (fromSeq..k), where a retry resumes. */
  | { phase: 'read'; filesRead: number; rowsRead: number; checkpointThroughSeq?: number }
  | { phase: 'encode'; bytesWritten: number }
  /** deadlineMs: epoch ms until which an opaque step (mergeInsert, optimize) keeps heartbeating. */
  | { phase: 'commit'; step: string; deadlineMs?: number };

export interface TableRef {
  table: string;
}

export interface SnapshotResult {
  shards: { shard: string; sealedThroughSeq: number; revision: number }[];
  /** Sum of the shards' revisions (each seal adds 1 to its shard's): grows with every seal. */
  revision: number;
}

export interface PrepareMergeInput extends TableRef {
  key: string;
  shard: string;
  fromSeq: number;
  toSeq: number;
}

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
}

export interface PrepareTimings {
  /** Reading, checksumming, decoding and validating generation files. */
  readMs: number;
  /** Keeping the newest row per key and gathering the winners into one batch. */
  dedupeMs: number;
  /** Encoding the prepared batch as Arrow IPC and writing it durably. */
  encodeMs: number;
}

export interface CommitMergeInput extends TableRef {
  key: string;
  prepared: PreparedMerge;
  /** Other shards' prepared batches committed in the same turn, in the same Lance commit. */
  more?: PreparedMerge[];
}

export interface CommitResult {
  version: number;
  rows: number;
  /** Time spent inside the Lance call that commits (ms). */
  lanceMs?: number;
}

export interface PlanOptimizeInput extends TableRef {
  /** When given, versions older than this count towards `needed` (pruning is due). */
  retentionSecs?: number;
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

export interface CommitOptimizeInput extends TableRef {
  retentionSecs: number;
}

export interface OptimizeResult extends CommitResult {
  fragmentsRemoved: number;
  fragmentsAdded: number;
  versionsPruned: number;
}

export interface IndexSpec {
  column: string;
  type: 'btree' | 'bitmap' | 'ivf_flat' | 'ivf_pq';
}

export interface IndexPlan {
  missing: IndexSpec[];
}

/** ensureIndex's result: a CommitResult (rows = the table's row count) plus what was built. */
export interface IndexResult extends CommitResult {
  built: IndexSpec[];
}

export interface GcPlanInput extends TableRef {
  /** Per shard merged-through seq: only generation files at or below it may go. */
  mergedThrough: { shard: string; mergedThroughSeq: number }[];
}

export interface GcPlan {
  files: string[];
  tempFiles: string[];
}

export interface GcResult {
  deleted: number;
  bytesFreed: number;
}
