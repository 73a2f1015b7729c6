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

export type { ActivityDeps, FaultHooks, FreezePoint } from './deps';
export type { GcInput } from './gc';

/** The activities a worker registers; names are the activity type names. */
export function createActivities(deps: ActivityDeps) {
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
