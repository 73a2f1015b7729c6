import type { CpuMeter } from './cpu-meter';
import type { DedupThreads } from './dedup-threads';
import type { OneAtATime } from './one-at-a-time';
import type { PreparedCache } from './prepared-cache';

// What a worker hands its activities. Workers are stateless: everything durable is in
// the storage root and in Temporal history.

export interface FreezePoint {
  activity: string;
  phase: 'read' | 'encode' | 'commit';
  /** optimize or gc, in its own activity or riding a merge's commit (activity commitMerge). */
  work?: 'optimize' | 'gc';
  attempt: number;
  /** Re-sends the activity's last progress; deduplicated, so it emits no heartbeat. */
  beat(): void;
}

/** Test-only fault injection. Production workers pass none. */
export interface FaultHooks {
  /**
   * Called at each progress point; a test returns a promise that does not settle to
   * freeze the activity there (cancellation still ends the wait).
   */
  freezeProgress?(point: FreezePoint): Promise<void> | void;
  /** Called after mergeInsert returned; throwing simulates a commit whose result was lost. */
  afterMergeInsert?(info: { attempt: number; version: number }): void;
}

/** What a worker tells its activities about memory; absent in tests without a budget. */
export interface AdmissionDeps {
  /**
   * Waits until `bytes` are reserved for this activity (see src/worker/memory-ledger.ts),
   * taking over `own`, a reservation the activity holds, when given.
   */
  reserve(id: string, bytes: number, what: { activity: string; unit?: string }, own?: string): Promise<void>;
  release(id: string): void;
  /** Budgets of the live workers (this one included): the fleet's smallest and largest. */
  fleetBudgets(): { smallest: number; largest: number };
}

export interface ActivityDeps {
  /** Storage root (TURNSTILE_DATA). */
  dataRoot: string;
  faults?: FaultHooks;
  log?: (msg: string) => void;
  /**
   * prepareMerge writes a checkpoint (a prepared batch of the files read so far) when
   * this many seconds passed since the last one, so a retry resumes after those files.
   * Default 10; 0 checkpoints after every file.
   */
  prepareCheckpointSecs?: number;
  /** Prepared batches kept for their commit on this worker (createActivities makes one). */
  preparedCache?: PreparedCache;
  /** Bytes of the prepared cache createActivities makes (default 256 MiB); a worker with a budget sets less. */
  preparedCacheBytes?: number;
  /** Orders preparations of one table on this worker (one-at-a-time.ts; createActivities makes one). */
  preparations?: OneAtATime;
  /** Threads for the CPU work of preparations (dedup-threads.ts; createActivities takes the process's unless `dedupThreadCount` is 0). */
  dedupThreads?: DedupThreads;
  /** How many dedup threads the process's pool has when this makes it (default: cores - 1, at most 4; none on two cores or fewer); 0 runs preparations on the worker's own thread. */
  dedupThreadCount?: number;
  /** Admission by reserved bytes (activities/memory-reservations.ts); absent: activities run unreserved (tests). */
  admission?: AdmissionDeps;
  /** Shares the process's CPU among its activities for their reported cost (cpu-meter.ts); default: the process's one. */
  cpuMeter?: CpuMeter;
}
