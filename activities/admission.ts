import { Context } from '@temporalio/activity';
import { formatBytes } from '../src/config/bytes';
import { generationFile, tableLayout } from '../src/storage/layout';
import { storageAt } from '../src/storage/open-storage';
import type { PrepareMergeInput } from './contract';
import type { ActivityDeps } from './deps';
import { fail } from './failures';

// What each activity reserves of its worker's memory budget (invariant 6, issue 8), and
// how big a merge batch may be. The factors are measured by bench/memory-factor.ts
// (peak RSS a unit adds, in a fresh process, over the bytes of the generation files it
// merges; bench/README.md): about 4x for a preparation and about 10x plus ~50 MiB for
// the mergeInsert of its commit, at 0.5M rows per unit. Rounded up here.

const MiB = 2 ** 20;
export const PREPARE_FACTOR = 4;
export const PREPARE_BASE_BYTES = 32 * MiB;
export const COMMIT_FACTOR = 10;
export const COMMIT_BASE_BYTES = 64 * MiB;
/** snapshot, planOptimize, planIndex, planGc, gc: metadata only. */
export const SMALL_BYTES = 16 * MiB;
/** commitOptimize and ensureIndex: not measured yet, a fixed guess (README says so). */
export const MAINTENANCE_BYTES = 128 * MiB;

/** What a worker tells its activities about memory; absent in tests without a budget. */
export interface AdmissionDeps {
  /** Waits until `bytes` are reserved for this activity (see src/worker/memory-ledger.ts). */
  reserve(id: string, bytes: number, what: { activity: string; unit?: string }): Promise<void>;
  release(id: string): void;
  /** Budgets of the live workers (this one included): the fleet's smallest and largest. */
  fleetBudgets(): { smallest: number; largest: number };
}

export const prepareReservation = (generationBytes: number): number => PREPARE_BASE_BYTES + PREPARE_FACTOR * generationBytes;
export const commitReservation = (preparedBytes: number): number => COMMIT_BASE_BYTES + COMMIT_FACTOR * preparedBytes;

/** The largest reservation a unit may have: half the smallest budget, so every worker runs two units at once. */
export const maxUnitBytes = (smallestBudget: number): number => Math.floor(smallestBudget / 2);

/** Generation bytes one merge batch may hold: its commit (the larger of its two steps) then fits maxUnitBytes. */
export const maxBatchBytes = (smallestBudget: number): number =>
  Math.max(1, Math.floor((maxUnitBytes(smallestBudget) - COMMIT_BASE_BYTES) / COMMIT_FACTOR));

/**
 * Runs `fn` holding `bytes` of the worker's budget; without admission (tests) just runs
 * it. The reservation ends with the activity, whatever its outcome.
 */
export async function withReservation<R>(deps: ActivityDeps, bytes: number, fn: () => Promise<R>): Promise<R> {
  if (!deps.admission) return fn();
  const info = Context.current().info;
  const wf = info.workflowExecution?.workflowId ?? '';
  const id = `${wf}/${info.activityId}#${info.attempt}`;
  await deps.admission.reserve(id, bytes, { activity: info.activityType, unit: `${wf.replace(/^table\//, '')}: ${info.activityId}` });
  try {
    return await fn();
  } finally {
    deps.admission.release(id);
  }
}

/**
 * Splitting (issue 8, point 3): the longest prefix fromSeq..k of the unit's range whose
 * generation files hold at most maxBatchBytes (at least one file), and their bytes. The
 * rest stays backlog for the next unit. A single generation whose merge needs more than
 * every live worker's whole budget can never merge: that fails for good, naming the
 * file, and the core holds the shard with that reason.
 */
export async function boundMergeRange(deps: ActivityDeps, input: PrepareMergeInput): Promise<{ toSeq: number; bytes: number; maxBatchBytes?: number }> {
  if (!deps.admission) return { toSeq: input.toSeq, bytes: 0 };
  const { smallest, largest } = deps.admission.fleetBudgets();
  const limit = maxBatchBytes(smallest);
  const l = tableLayout(deps.dataRoot, input.table);
  const store = storageAt(deps.dataRoot);
  let bytes = 0;
  let toSeq = input.fromSeq;
  for (let seq = input.fromSeq; seq <= input.toSeq; seq++) {
    const file = generationFile(l, input.shard, seq);
    // A missing file is the preparation's to report (or skip, below the gc floor).
    const size = (await store.stat(file))?.size ?? 0;
    if (seq > input.fromSeq && bytes + size > limit) break;
    if (seq === input.fromSeq && commitReservation(size) > largest) {
      throw fail(
        'TooBig',
        `generation ${file} is ${formatBytes(size)}; merging it needs ${formatBytes(commitReservation(size))}, more than any worker's memory budget (largest ${formatBytes(largest)}, worker.memoryBudgetBytes)`,
      );
    }
    bytes += size;
    toSeq = seq;
  }
  return { toSeq, bytes, maxBatchBytes: limit };
}

/** The reservation of activities whose memory does not grow with their input. */
export const FIXED_RESERVATIONS: Record<string, number> = {
  snapshot: SMALL_BYTES,
  planOptimize: SMALL_BYTES,
  planIndex: SMALL_BYTES,
  planGc: SMALL_BYTES,
  gc: SMALL_BYTES,
  commitOptimize: MAINTENANCE_BYTES,
  ensureIndex: MAINTENANCE_BYTES,
};
