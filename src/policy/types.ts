// Types of the pure scheduling core. Everything here is plain JSON (no Map, no Date):
// the table workflow carries it across continue-as-new, and the simulator and the
// property tests build it without Temporal.

import type { GcPlan, IndexPlan, OptimizePlan, PreparedMerge, UnitCost } from './unit-results';

export const KINDS = ['merge', 'optimize', 'index', 'gc'] as const;
export type Kind = (typeof KINDS)[number];

export const PHASES = ['read', 'encode', 'commit'] as const;
export type Phase = (typeof PHASES)[number];

export type SchedClass = 1 | 2 | 3 | 4;

export type PerKind<T> = { [K in Kind]: T };

/** The per-table policy. Defaults and ranges live in src/config/policy-schema.ts. */
export interface Policy {
  /** A kind may not take more than this many turns in a row while another kind is commit-ready. */
  maxConsecutiveTurns: PerKind<number>;
  /** A commit-ready unit that has waited this long is promoted to class 1. */
  maxTurnWaitSecs: PerKind<number>;
  /** Heartbeat timeout per progress phase: no progress for this long means stalled. */
  stallSecs: { [P in Phase]: number };
  /** Default class per kind (merge is promoted to 1 while backlog > softBacklog). */
  classes: PerKind<SchedClass>;
  /** Base priority per kind within a class; aged priority = base + agingPerSec * waitedSecs. */
  basePriority: PerKind<number>;
  agingPerSec: number;
  softBacklog: number;
  hardBacklog: number;
  maxWriteDelayMs: number;
  /** At most this many units of one table prepare at once. */
  maxConcurrentPreparations: number;
  /**
   * A merge of one generation no bigger than this (bytes, as its writer reported) gets
   * no preparation activity: its commit reads and checks the file (0 = always prepare).
   */
  directMergeMaxBytes: number;
  /** Period of the generation-store snapshot that can correct watermarks, right after activity. */
  snapshotIntervalSecs: number;
  /**
   * While nothing changes the snapshot period doubles up to this (never below
   * snapshotIntervalSecs): the bound on how late a lost demand signal is recovered.
   */
  snapshotMaxIntervalSecs: number;
  /** How often optimize, index and gc are considered (0 = only when bumped). merge is demand-driven. */
  periodSecs: { optimize: number; index: number; gc: number };
  /** true: optimize, index and gc run every period even when nothing changed since their last run. */
  periodicWhenIdle: boolean;
  /** Versions older than this are pruned by optimize. */
  retentionSecs: number;
  /** Backoff of a failed commit before its unit may hold the turn again: min(base * 2^(n-1), max). */
  commitRetryBaseSecs: number;
  commitRetryMaxSecs: number;
  /**
   * A commit no worker has taken after this long (no worker had the memory headroom)
   * gives the turn back and waits min(this * 2^(n-1), max(this,
   * commitRetryMaxSecs)) before it may take the turn again. 0: it waits in the task
   * queue holding the turn. Absent in policies from before it existed.
   */
  commitAdmissionWaitSecs?: number;
  /** Adopted tables: compaction is due once the table has this many small fragments. */
  compactAtSmallFragments?: number;
  /** Adopted tables: an index is refreshed once this share of the table's rows is not in it. */
  indexAtUnindexedShare?: number;
  /** Adopted tables: old versions are pruned once this many are older than retentionSecs. */
  pruneAtVersions?: number;
  /** Adopted tables: a commit that loses a race with an outside writer is retried this many times. */
  conflictRetries?: number;
  /** Adopted tables: longest jittered wait between two of those retries. */
  conflictBackoffMaxSecs?: number;
}

export interface ShardState {
  shard: string;
  sealedThroughSeq: number;
  /** Revision of the event that last set sealedThroughSeq; a snapshot may lower it only with a newer one. */
  sealedRevision: number;
  mergedThroughSeq: number;
  /** Set when this shard's merge is held (e.g. a corrupt generation); cleared by `resume`. */
  heldReason: string | null;
  /** Size of generation sealedThroughSeq, when a demand reported it (a snapshot does not). */
  sealedBytes?: number;
}

export type UnitState = 'preparing' | 'ready' | 'committing' | 'backoff';

/** What each kind's preparation hands to its commit; the core carries it and never reads it. */
export interface PreparedOf {
  merge: PreparedMerge;
  optimize: OptimizePlan;
  index: IndexPlan;
  gc: GcPlan;
}

export type PeriodicKind = Exclude<Kind, 'merge'>;

interface UnitCommon {
  /** Stable id: `merge/<shard>` (a pipelined follower: `merge/<shard>@<fromSeq>`), `optimize`, `index`, `gc`. */
  id: string;
  state: UnitState;
  createdAtMs: number;
  /** When it became commit-ready (first time; kept across commit retries so aging is not lost). */
  readySinceMs: number | null;
  /** When it entered class 1 by waiting maxTurnWaitSecs (null if not promoted). */
  promotedAtMs: number | null;
  /** Not before this time may it take the turn (commit backoff). */
  notBeforeMs: number | null;
  commitAttempts: number;
  reservedBytes: number;
  /** Last failure of this unit (shown in status while it backs off). */
  lastError: string | null;
  /**
   * Set when a grouped commit this unit rode in failed for good: it commits alone next,
   * so a bad batch holds only its own shard. Absent in states from before grouping.
   */
  solo?: boolean;
  /**
   * A pipelined follower whose preparation found nothing to commit: it waits, without
   * the turn, until its head has committed, then finishes (its range must not count as
   * merged before the head's).
   */
  emptyPrepared?: boolean;
  /**
   * Its commit was not taken by any worker within commitAdmissionWaitSecs
   * (no headroom in the fleet): the bytes its commit reserves, shown while it waits
   * without the turn. Cleared when a commit of it is taken and ends.
   */
  waitingForBytes?: number;
  /** How many times in a row its commit found no headroom (the doubling of its wait). */
  headroomWaits?: number;
  /**
   * Its preparation scanned the store on the way out (a merge's does): that scan came
   * after the demand that made the unit, so its commit need not bring the next snapshot
   * closer (idle.ts).
   */
  scanned?: boolean;
  /**
   * optimize or gc going with a merge's turn (rides.ts): it has no preparation and no
   * turn of its own, and ends with that turn. Never carried across continue-as-new.
   */
  rider?: true;
}

/** A merge of one shard's seq range fromSeq..toSeq. */
export interface MergeUnit extends UnitCommon {
  kind: 'merge';
  shard: string;
  fromSeq: number;
  toSeq: number;
  /** The result of preparation (null until prepared), handed to the commit activity. */
  prepared: PreparedMerge | null;
}

/** optimize, index or gc: the whole table, so no shard and no range (null, as carried states hold them). */
export type PeriodicUnit = {
  [K in PeriodicKind]: UnitCommon & { kind: K; shard: null; fromSeq: null; toSeq: null; prepared: PreparedOf[K] | null };
}[PeriodicKind];

/** One piece of maintenance work; the JSON shape of every unit carried across continue-as-new. */
export type Unit = MergeUnit | PeriodicUnit;

export interface Bump {
  /** Either a kind or a unit id. */
  target: { kind: Kind } | { unitId: string };
  class: SchedClass;
  reason: string;
  expiresAtMs: number;
}

export interface Counters {
  turns: PerKind<number>;
  stalls: number;
  retries: number;
  /** Max observed wait (commit-ready until turn granted) per kind, seconds. */
  maxTurnWaitSecs: PerKind<number>;
  merges: number;
  rowsMerged: number;
  /**
   * Signals dropped by the workflow: malformed, refused against the table (unknown
   * shard, implausible seq, repeated pause ...) or over the inbox bound. Absent until
   * the first one, and in states from before it existed.
   */
  rejectedSignals?: number;
  /** Commits that gave the turn back because no worker had the headroom for them. */
  headroomWaits?: number;
  /** Commit attempts lost to a concurrent outside commit (adopted tables), retried or not. */
  commitConflicts?: number;
}

export interface TurnHolder {
  unitId: string;
  kind: Kind;
  sinceMs: number;
  /** Why it won: "class 1, promoted after 30 s". */
  why: string;
  /** Merge units committed in the same turn, in one Lance commit (see evaluate.ts). */
  riders?: string[];
  /**
   * The streak before this grant, so a grant whose commit never started (made while the
   * run drained for continue-as-new) can be taken back by carryOver.
   */
  streakBefore: Streak | null;
}

/** The kind of the last granted turns and how many in a row. */
export interface Streak {
  kind: Kind;
  count: number;
}

/**
 * What a periodic kind's last run covered, as a change mark: the table version for
 * optimize and index, the sum of mergedThroughSeq for gc (both only grow).
 */
export interface PeriodicMark {
  /** The mark when its latest unit was created. */
  planned: number | null;
  /** The mark its last completed run covered; null: run at its next due time regardless. */
  done: number | null;
}

/** What a look at an adopted table found (activities/observe-table.ts). */
export interface Observation {
  atMs: number;
  version: number;
  rows: number;
  /** Bytes of the table's data files at this version. */
  bytes: number;
  fragments: number;
  smallFragments: number;
  /** Rows in the small fragments, estimated (small fragments x the median fragment length). */
  smallRows?: number;
  /** Rows not covered, summed over the table's indices. */
  unindexedRows: number;
  indices: number;
}

export type AdoptedMode = 'shadow' | 'active';

/**
 * A table written by others that Turnstile maintains (`table adopt`): no shards, its
 * versions are the demand, and in shadow mode no commit of Turnstile's is carried out.
 */
export interface Adopted {
  /** The Lance table's directory: a local path or s3://BUCKET/PREFIX/NAME.lance. */
  uri: string;
  mode: AdoptedMode;
  /** The latest observation, null until the first. */
  observed: Observation | null;
}

export interface TableState {
  table: string;
  key: string;
  policy: Policy;
  shards: ShardState[];
  units: Unit[];
  turn: TurnHolder | null;
  streak: Streak | null;
  paused: boolean;
  pausedKinds: Kind[];
  bumps: Bump[];
  counters: Counters;
  /** Latest table version known from commits. */
  version: number;
  /** Next time optimize/index/gc become due (ms), and the next snapshot. */
  dueAtMs: { optimize: number; index: number; gc: number; snapshot: number };
  /** True while a snapshot activity is in flight. */
  snapshotInFlight: boolean;
  /** Write pressure last published, in [0, 1]. */
  writePressure: number;
  /** When activity asked the next snapshot to come by, not applied yet (idle.ts, settlePullIn). */
  pullInAtMs?: number;
  /** The grant time (turn.sinceMs) of the merge commit that pullInAtMs waits for, once it waits. */
  pullInGrantMs?: number;
  /**
   * The current snapshot period (secs): snapshotIntervalSecs after activity, doubling
   * after every quiet snapshot up to the max (see idle.ts); half the base while a scan
   * that started before the latest activity is running.
   */
  snapshotEverySecs: number;
  /**
   * When something last happened that makes a lost signal worth looking for (a demand,
   * a merge, an operator action; idle.ts): a preparation's scan that may have read the
   * store before it does not count as quiet. Absent in states from before it.
   */
  activityAtMs?: number;
  /**
   * The last index plan found no index the table should have (none in table.json, and
   * too few rows for one on its key): the index kind then runs only when bumped (idle.ts,
   * hasChanged), instead of opening the Lance table every period to find nothing to
   * build, or until a merge's commit reports the key index missing. Absent until a plan
   * reports it.
   */
  noIndices?: boolean;
  /**
   * How long each maintenance kind's last commit took (ms). Under BRIEF_COMMIT_MS,
   * optimize and gc ride the next merge's turn when they fall due (rides.ts), and the
   * kind's next turn is not published when granted (brief-turn.ts). Absent until the
   * kind has committed once.
   */
  lastCommitMs?: { optimize?: number; index?: number; gc?: number };
  /** Per periodic kind, what its last run covered (see changeMark in idle.ts). */
  periodic: { optimize: PeriodicMark; index: PeriodicMark; gc: PeriodicMark };
  /** Present only for adopted tables. */
  adopted?: Adopted;
}

// ---- events fed by the workflow shell ----

/** What a maintenance kind that rode a merge's turn did there (rides.ts); absent: it did not run. */
export interface MaintainedRun {
  /** How long it took inside the commit. */
  ms: number;
  /** optimize: the table's rows; gc: files deleted. */
  rows: number;
  /** optimize: the table version it made (the merge's own when it found nothing to do). */
  version?: number;
  /** It failed (the merge committed all the same). */
  error?: string;
  cost?: UnitCost;
}

export type Maintained = { optimize?: MaintainedRun; gc?: MaintainedRun };

/** A scan of the generation store: every shard's sealed-through seq and revision. */
export interface StoreScan {
  revision: number;
  shards: { shard: string; sealedThroughSeq: number; revision: number }[];
}

export type PolicyEvent =
  /** bytes: the size of generation sealedThroughSeq, when the writer reports it. */
  | { type: 'demand'; shard: string; sealedThroughSeq: number; revision: number; bytes?: number }
  | ({ type: 'snapshot' } & StoreScan)
  | { type: 'snapshotFailed'; error: string }
  | PreparedEvent
  | { type: 'prepareFailed'; unitId: string; error: string; retryable: boolean; stalled: boolean }
  /** scan: the store as a merge's commit saw it when it ended (it counts as a snapshot). */
  /** `keyIndexMissing`: a merge's commit found the table grown to want a BTREE on its key, which it lacks. */
  | { type: 'committed'; unitId: string; version: number; rows?: number; attempts: number; scan?: StoreScan; conflicts?: number; observation?: Observation; cost?: UnitCost; maintained?: Maintained; keyIndexMissing?: boolean }
  | { type: 'commitFailed'; unitId: string; error: string; retryable: boolean; stalled: boolean; conflicts?: number; cost?: UnitCost }
  /**
   * The turn holder's commit was taken by no worker within commitAdmissionWaitSecs:
   * it never started, so nothing was done. `bytes`: what the commit reserves.
   */
  | { type: 'noHeadroom'; unitId: string; bytes: number }
  | { type: 'timer' }
  | { type: 'bump'; bump: Bump }
  | { type: 'pause'; kind: Kind | null }
  | { type: 'resume'; kind: Kind | null }
  | { type: 'policyChanged'; policy: Policy }
  /** An adopted table was looked at (its snapshot). */
  | { type: 'observed'; observation: Observation }
  | { type: 'observeFailed'; error: string }
  | { type: 'modeChanged'; mode: AdoptedMode };

/**
 * A preparation finished; its result has the shape of its unit's kind. `scan`: the
 * store as the preparation saw it when it ended (merges scan every shard on the way
 * out), which counts as a snapshot (idle.ts).
 */
export type PreparedEvent = {
  [K in Kind]: { type: 'prepared'; kind: K; unitId: string; needsCommit: boolean; prepared: PreparedOf[K] | null; reservedBytes?: number; attempts: number; scan?: StoreScan; cost?: UnitCost };
}[Kind];

// ---- decisions the workflow shell carries out ----

export type Decision =
  | { type: 'prepare'; unit: Unit }
  /** riders: merges committed with `unit` in the same turn (one Lance commit). */
  | { type: 'commit'; unit: Unit; why: string; riders?: Unit[] }
  | { type: 'snapshot' }
  /** One durable timer for the earliest deadline; null means no timer is needed. reason: what it waits for (wake.ts). */
  | { type: 'wakeAt'; atMs: number | null; reason: string | null; id: string | null };

export interface StepResult {
  state: TableState;
  decisions: Decision[];
}
