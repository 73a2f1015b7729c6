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
import { PreparedCache } from './prepared-cache';

/** Prepared batches a worker keeps in memory for their commits (see prepared-cache.ts). */
const PREPARED_CACHE_BYTES = 256 * 2 ** 20;

export type { ActivityDeps, FaultHooks, FreezePoint } from './deps';
export type { GcInput } from './gc';
export { activityInterceptors } from './interceptors';

/** The activities a worker registers; names are the activity type names. */
export function createActivities(input: ActivityDeps) {
  const deps: ActivityDeps = { ...input, preparedCache: input.preparedCache ?? new PreparedCache(PREPARED_CACHE_BYTES) };
  return {
    snapshot: makeSnapshot(deps),
    prepareMerge: makePrepareMerge(deps),
    commitMerge: makeCommitMerge(deps),
    planOptimize: makePlanOptimize(deps),
    commitOptimize: makeCommitOptimize(deps),
    planIndex: makePlanIndex(deps),
    ensureIndex: makeEnsureIndex(deps),
    planGc: makePlanGc(deps),
    gc: makeGc(deps),
  };
}
