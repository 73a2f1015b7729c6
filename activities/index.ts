import { FIXED_RESERVATIONS, SMALL_BYTES, withReservation } from './memory-reservations';
import { makeAdoptedActivities } from './adopted';
import { makeCommitMerge } from './commit-merge';
import { makeCommitOptimize } from './commit-optimize';
import type { ActivityDeps } from './deps';
import { makeEnsureIndex } from './ensure-index';
import { makeGc } from './gc';
import { makePlanGc } from './plan-gc';
import { makePlanIndex } from './plan-index';
import { makePlanOptimize } from './plan-optimize';
import { makePrepareMerge } from './prepare-merge';
import { makeSnapshot } from './snapshot';
import { dedupThreadsFor } from './dedup-threads';
import { OneAtATime } from './one-at-a-time';
import { PreparedCache } from './prepared-cache';

/** Prepared batches a worker keeps in memory for their commits (see prepared-cache.ts). */
export const PREPARED_CACHE_BYTES = 256 * 2 ** 20;

export type { ActivityDeps, FaultHooks, FreezePoint } from './deps';
export type { GcInput } from './gc';
export { activityInterceptors } from './interceptors';

type Fixed = <A, R>(name: string, fn: (a: A) => Promise<R>) => (a: A) => Promise<R>;

/** Adopted tables' activities reserve what the generation kinds' counterparts do. */
function adopted(fixed: Fixed, a: ReturnType<typeof makeAdoptedActivities>) {
  return {
    observeTable: fixed('snapshot', a.observeTable),
    planAdopted: fixed('planOptimize', a.planAdopted),
    commitAdopted: fixed('commitOptimize', a.commitAdopted),
  };
}

/** The activities a worker registers; names are the activity type names. */
export function createActivities(input: ActivityDeps) {
  const deps: ActivityDeps = {
    ...input,
    preparedCache: input.preparedCache ?? new PreparedCache(input.preparedCacheBytes ?? PREPARED_CACHE_BYTES),
    preparations: input.preparations ?? new OneAtATime(),
  };
  const threads = dedupThreadsFor(input);
  if (threads) deps.dedupThreads = threads;
  // Merges reserve by their input (inside their own factories); the others a fixed size.
  const fixed = <A, R>(name: string, fn: (a: A) => Promise<R>) => (a: A) => withReservation(deps, FIXED_RESERVATIONS[name] ?? SMALL_BYTES, () => fn(a));
  return {
    // A task-queue activity like the others (the local-activity version broke replay): a metadata scan.
    snapshot: fixed('snapshot', makeSnapshot(deps)),
    prepareMerge: makePrepareMerge(deps),
    commitMerge: makeCommitMerge(deps),
    planOptimize: fixed('planOptimize', makePlanOptimize(deps)),
    commitOptimize: fixed('commitOptimize', makeCommitOptimize(deps)),
    planIndex: fixed('planIndex', makePlanIndex(deps)),
    ensureIndex: fixed('ensureIndex', makeEnsureIndex(deps)),
    planGc: fixed('planGc', makePlanGc(deps)),
    gc: fixed('gc', makeGc(deps)),
    ...adopted(fixed, makeAdoptedActivities(deps)),
  };
}
