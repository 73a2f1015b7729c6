// The activity contract between the table workflow and the workers. Workflows import
// this file only as `import type`; inputs and results are plain JSON (< 512 KiB).
// What a preparation hands to its commit lives below, in src/policy/unit-results.ts (the core
// carries it in its units); the table's own records in src/storage.

import type { IndexSpec } from '../src/messages/index-spec';
import type { GcPlan, IndexPlan, OptimizePlan, PreparedMerge, UnitCost } from '../src/policy/unit-results';
import type { SnapshotResult } from '../src/storage/generation-store';
import type { Maintained } from '../src/policy/types';
import type { MergeJoin } from '../src/storage/merge-join';

export type { IndexSpec } from '../src/messages/index-spec';
export type { SnapshotResult } from '../src/storage/generation-store';
export type { GcPlan, IndexPlan, OptimizePlan, PreparedMerge, PrepareTimings, UnitCost } from '../src/policy/unit-results';

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

export interface PrepareMergeInput extends TableRef {
  key: string;
  shard: string;
  fromSeq: number;
  toSeq: number;
}

/**
 * What an activity that does a unit's work cost (activities/unit-cost.ts). Optional:
 * results of workers that do not measure it have none. Not part of what a preparation
 * hands its commit (PreparedMerge and the plans): the table takes it out of the result.
 */
export interface Costed {
  cost?: UnitCost;
}

/** A preparation's batch, and the store as the preparation saw it when it ended. */
export interface PrepareMergeResult extends PreparedMerge, Costed {
  scan?: SnapshotResult;
}

export interface CommitMergeInput extends TableRef {
  key: string;
  prepared: PreparedMerge;
  /** Other shards' prepared batches committed in the same turn, in the same Lance commit. */
  more?: PreparedMerge[];
  /** Maintenance riding the turn (src/policy/rides.ts), planned and run after the upsert. */
  maintain?: MaintainInput;
}

export interface MaintainInput {
  optimize?: { retentionSecs: number };
  gc?: Pick<GcPlanInput, 'mergedThrough'>;
}

export interface CommitResult extends Costed {
  version: number;
  rows: number;
  /** Time spent inside the Lance call that commits (ms). */
  lanceMs?: number;
  /** A merge's commit, step by step (ms): where a turn's time went besides the Lance call. */
  steps?: CommitSteps;
  /** A merge's commit: how Lance found the table's rows for the batch's keys (src/storage/merge-join.ts). */
  join?: MergeJoin;
  /** A merge's commit: the table has grown to want a BTREE on its key and has none (the index kind builds it). */
  keyIndexMissing?: true;
  /** A merge's commit: the store as it saw it when it ended (the table counts it as a snapshot). */
  scan?: SnapshotResult;
  /** A merge's commit: what the maintenance riding its turn did (one entry per kind it was asked to run). */
  maintained?: Maintained;
}

export interface CommitSteps {
  /** Reading the batches (from this worker's memory, or their files). */
  readMs: number;
  /** Opening (or creating) the Lance table. */
  openMs: number;
  /** Encoding the batch as IPC for lancedb: part of lanceMs. */
  encodeMs: number;
  /** The scan of every shard after the commit. */
  scanMs: number;
}

export interface PlanOptimizeInput extends TableRef {
  /** When given, versions older than this count towards `needed` (pruning is due). */
  retentionSecs?: number;
}

export type PlanOptimizeResult = OptimizePlan & Costed;

export type PlanIndexResult = IndexPlan & Costed;

export type PlanGcResult = GcPlan & Costed;

export interface CommitOptimizeInput extends TableRef {
  retentionSecs: number;
}

export interface OptimizeResult extends CommitResult {
  fragmentsRemoved: number;
  fragmentsAdded: number;
  versionsPruned: number;
}

/** ensureIndex's result: a CommitResult (rows = the table's row count) plus what was built. */
export interface IndexResult extends CommitResult {
  built: IndexSpec[];
}

export interface GcPlanInput extends TableRef {
  /** Per shard merged-through seq: only generation files at or below it may go. */
  mergedThrough: { shard: string; mergedThroughSeq: number }[];
}

export interface GcResult extends Costed {
  deleted: number;
  /** Bytes of the files deleted: freed, not written (cost.bytesWritten does not include them). */
  bytesFreed: number;
}
