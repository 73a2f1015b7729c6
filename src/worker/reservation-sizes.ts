// What a unit reserves of a worker's memory budget (invariant 6), computed
// from its input before it runs. Pure (no I/O, no Temporal): the activities reserve by
// it (activities/memory-reservations.ts) and the table workflow tells how much headroom a queued
// commit waits for (workflows/run-unit.ts). The factors are measured by
// bench/memory-factor.ts (peak RSS a unit adds, in a fresh process, over the bytes of
// the generation files it merges; bench/README.md): about 4x for a preparation and
// about 10x plus ~50 MiB for the mergeInsert of its commit, at 0.5M rows per unit.
// Rounded up here.

const MiB = 2 ** 20;
export const PREPARE_FACTOR = 4;
export const PREPARE_BASE_BYTES = 32 * MiB;
export const COMMIT_FACTOR = 10;
export const COMMIT_BASE_BYTES = 64 * MiB;
/** snapshot, planOptimize, planIndex, planGc, gc: metadata only. */
export const SMALL_BYTES = 16 * MiB;
/** commitOptimize and ensureIndex: not measured yet, a fixed guess (README says so). */
export const MAINTENANCE_BYTES = 128 * MiB;

export const prepareReservation = (generationBytes: number): number => PREPARE_BASE_BYTES + PREPARE_FACTOR * generationBytes;
export const commitReservation = (preparedBytes: number): number => COMMIT_BASE_BYTES + COMMIT_FACTOR * preparedBytes;

/**
 * Bytes of a worker's budget held for its prepared-batch cache (activities/prepared-cache.ts):
 * an eighth, at most 256 MiB. Units share the rest.
 */
export const preparedCacheBytes = (budget: number): number => Math.min(256 * MiB, Math.floor(budget / 8));

/** worker.maxConcurrentActivities unless configured (config-schema.ts, create-worker.ts). */
export const DEFAULT_ACTIVITY_SLOTS = 8;
/** Poll claims a worker with a large budget can hold at once: one per default activity slot. */
export const CLAIMS_PER_WORKER = DEFAULT_ACTIVITY_SLOTS;
/** The largest unit is not cut below this to make room for more claims: batches stay large. */
export const MIN_CLAIMED_UNIT_BYTES = 1024 * MiB;

/**
 * The largest reservation a unit may have. Every poll holds a claim of this size
 * (src/worker/memory-slots.ts), so it also sets how many polls a worker has out at once,
 * and with them how many tasks a second it can take: one poll at a time made 1,000
 * tables fall hopelessly behind (bench/README.md). So: what units share of
 * the smallest budget (the budget less its prepared cache) split into CLAIMS_PER_WORKER
 * claims, but not below MIN_CLAIMED_UNIT_BYTES (batches stay large), and never more than
 * half, so that every worker holds at least two claims and runs two such units at once.
 */
export function maxUnitBytes(smallestBudget: number): number {
  const share = smallestBudget - preparedCacheBytes(smallestBudget);
  return Math.floor(Math.min(share / 2, Math.max(share / CLAIMS_PER_WORKER, MIN_CLAIMED_UNIT_BYTES)));
}

/** Generation bytes one merge batch may hold: its commit (the larger of its two steps) then fits maxUnitBytes. */
export const maxBatchBytes = (smallestBudget: number): number =>
  Math.max(1, Math.floor((maxUnitBytes(smallestBudget) - COMMIT_BASE_BYTES) / COMMIT_FACTOR));

/** The fixed reservation of the activities whose memory does not grow with their input. */
export const FIXED_RESERVATIONS: Record<string, number> = {
  snapshot: SMALL_BYTES,
  planOptimize: SMALL_BYTES,
  planIndex: SMALL_BYTES,
  planGc: SMALL_BYTES,
  gc: SMALL_BYTES,
  commitOptimize: MAINTENANCE_BYTES,
  ensureIndex: MAINTENANCE_BYTES,
};

/** What a merge's commit reserves on top for the maintenance kinds riding its turn (src/policy/rides.ts). */
export const ridersReservation = (kinds: readonly string[]): number =>
  (kinds.includes('optimize') ? FIXED_RESERVATIONS.commitOptimize! : 0) + (kinds.includes('gc') ? FIXED_RESERVATIONS.gc! : 0);
