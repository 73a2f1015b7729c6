// What a unit reserves of a worker's memory budget (invariant 6, issue 8), computed
// from its input before it runs. Pure (no I/O, no Temporal): the activities reserve by
// it (activities/admission.ts) and the table workflow tells how much headroom a queued
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

/** The largest reservation a unit may have: half the smallest budget, so every worker runs two units at once. */
export const maxUnitBytes = (smallestBudget: number): number => Math.floor(smallestBudget / 2);

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
