import type { Decision, Kind, PerKind, Policy, PolicyEvent, TableState } from '../policy/types';
import type { Range, Rng } from './rng';

/** A writer lane's seals: one generation every `everyMs` on each of `shards`. */
export interface ArrivalProcess {
  /** Default: every shard of the table. */
  shards?: string[];
  everyMs: Range;
  startMs?: number;
  /** No seals at or after this time. */
  stopMs?: number;
  /** Delay between the seal and its demand event reaching the workflow (reorders them). */
  deliveryDelayMs?: Range;
  /** Probability that a demand event is delivered a second time, later. */
  duplicateProb?: number;
  /** Probability that a seal's demand is never delivered (its writer died between seal and signal). */
  lostProb?: number;
  rowsPerGeneration?: number;
  /** When set, demand events report this generation size (direct merges: policy directMergeMaxBytes). */
  bytesPerGeneration?: number;
}

/** One seal at a fixed time (a recorded table's, replayed); its demand is delivered at once, exactly once. */
export interface ScheduledSeal {
  atMs: number;
  shard: string;
  /** The generation's size as its demand reports it (absent: no size, so never a direct merge). */
  bytes?: number;
}

/**
 * How long activities take and whether a preparation finds work, as a function of the
 * simulated time: lets a replay follow a recorded table's durations as they changed
 * over the window. Draw only from `rng`, so a run stays a function of its seed.
 */
export interface ActivityModel {
  /** ms the activity runs: a unit's preparation (a merge's covers `generations`), or its commit (the turn held). */
  durationMs(a: { phase: 'prepare' | 'commit'; kind: Kind; generations: number; atMs: number }, rng: Rng): number;
  /** Probability that a preparation of `kind` started at atMs finds something to commit (merges always do). */
  needsCommit(kind: Kind, atMs: number): number;
}

/** Failure probabilities of activities (checked in this order: fatal, retryable). */
export interface FaultRates {
  /** Fails for good (non-retryable). */
  fatal?: number;
  /** Fails, may be retried. */
  retryable?: number;
  /** Share of retryable failures that are stalls. */
  stalled?: number;
  /** Probability that a success needed a second Temporal attempt (attempts = 2). */
  retriedAttempts?: number;
}

export interface OperatorAction {
  atMs: number;
  /** Built at delivery time, e.g. to give a bump an expiry relative to now. */
  event: PolicyEvent | ((nowMs: number, state: TableState) => PolicyEvent);
}

export interface StepInfo {
  nowMs: number;
  event: PolicyEvent;
  before: TableState;
  after: TableState;
  decisions: Decision[];
}

export interface SimConfig {
  table?: string;
  shards: string[];
  policy: Policy;
  seed: number;
  /** Simulated start time (ms). */
  startMs?: number;
  /** The run stops at this simulated time. */
  endMs: number;
  prepareMs: PerKind<Range>;
  /**
   * Added to a merge's preparation per generation in its range, so merge throughput is
   * bounded (without it a merge of any range costs the same and backlog never builds).
   */
  mergeMsPerGeneration?: number;
  commitMs: PerKind<Range>;
  snapshotMs?: Range;
  arrivals?: ArrivalProcess[];
  /** Seals at given times, in time order (beside or instead of arrivals); read lazily, so it may be a generator. */
  seals?: Iterable<ScheduledSeal>;
  /** When set, replaces prepareMs, commitMs, mergeMsPerGeneration and needsCommit. */
  activities?: ActivityModel;
  /**
   * Every N seconds optimize is requested (as an operator would with a bump that keeps
   * its normal class): it becomes due and is prepared, then waits for the turn.
   */
  optimizeEverySecs?: number;
  /** Probability per kind that a preparation finds something to commit (default 1). */
  needsCommit?: Partial<PerKind<number>>;
  prepareFaults?: FaultRates;
  commitFaults?: FaultRates;
  snapshotFailProb?: number;
  /** A merge's preparation and commit scan the store when they end, as the real ones do (activities/prepare-merge.ts, commit-merge.ts). */
  scanOnPrepare?: boolean;
  operator?: OperatorAction[];
  /** Record backlog and pressure every this many ms. */
  sampleEveryMs?: number;
  onStep?: (info: StepInfo) => void;
  /** Called for every seal, before its demand (if any) is on its way. */
  onSeal?: (seal: { shard: string; seq: number; atMs: number; lost: boolean }) => void;
  /** Checked after every step; true ends the run early. */
  stopWhen?: (state: TableState, nowMs: number, sim: { sealed: Record<string, number>; arrivalsDone: boolean }) => boolean;
}

export interface TurnRecord {
  unitId: string;
  kind: Kind;
  readySinceMs: number;
  grantedAtMs: number;
  releasedAtMs: number | null;
  committed: boolean | null;
  why: string;
}

export interface Sample {
  atMs: number;
  backlog: number;
  writePressure: number;
  turn: string | null;
}

export interface SimResult {
  state: TableState;
  nowMs: number;
  steps: number;
  turns: TurnRecord[];
  samples: Sample[];
  /** The generation store's truth: per shard the last sealed seq. */
  sealed: Record<string, number>;
}
