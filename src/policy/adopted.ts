import type { AdoptedMode, Observation, PeriodicKind, Policy, TableState } from './types';

// Adopted tables: Lance tables that outside processes write directly. Nothing signals
// their writes, so the table is looked at (the snapshot of a generation table) and
// every new version counts as activity; optimize, index and gc become due when what the
// look found crosses the policy's criteria, not when a merge changed the table.

export const ADOPTED_DEFAULTS = {
  compactAtSmallFragments: 32,
  indexAtUnindexedShare: 0.1,
  pruneAtVersions: 20,
  conflictRetries: 8,
  conflictBackoffMaxSecs: 2,
} as const;

type Criteria = Required<Pick<Policy, keyof typeof ADOPTED_DEFAULTS>>;

/** The adopted-table keys of a policy, defaulted (carried policies from before them lack them). */
export function criteria(p: Policy): Criteria {
  return {
    compactAtSmallFragments: p.compactAtSmallFragments ?? ADOPTED_DEFAULTS.compactAtSmallFragments,
    indexAtUnindexedShare: p.indexAtUnindexedShare ?? ADOPTED_DEFAULTS.indexAtUnindexedShare,
    pruneAtVersions: p.pruneAtVersions ?? ADOPTED_DEFAULTS.pruneAtVersions,
    conflictRetries: p.conflictRetries ?? ADOPTED_DEFAULTS.conflictRetries,
    conflictBackoffMaxSecs: p.conflictBackoffMaxSecs ?? ADOPTED_DEFAULTS.conflictBackoffMaxSecs,
  };
}

/**
 * Whether a periodic kind of an adopted table has work by the latest observation:
 * compaction by small fragments, index by the unindexed share; gc (pruning old
 * versions) whenever the version moved since its last run, since only listing the
 * versions (its plan) tells how many are past the retention.
 */
export function adoptedWants(state: TableState, kind: PeriodicKind): boolean {
  const done = state.periodic[kind].done;
  if (done === null) return true; // bumped
  const obs = state.adopted?.observed ?? null;
  if (obs === null) return false;
  const c = criteria(state.policy);
  switch (kind) {
    case 'optimize':
      return obs.smallFragments >= c.compactAtSmallFragments;
    case 'index':
      // A share compared as a quotient: share * rows rounds above an exact count (0.07 * 100 > 7).
      return obs.indices > 0 && obs.unindexedRows > 0 && obs.unindexedRows / Math.max(1, obs.rows) >= c.indexAtUnindexedShare;
    case 'gc':
      return done !== state.version;
  }
}

/** Folds a look at the table in; whether it found a new version (activity: looked at again soon). */
export function foldObservation(state: TableState, obs: Observation, nowMs: number): boolean {
  if (!state.adopted) return false;
  // A look that ran beside a commit can come back after it with the version before:
  // versions only grow (a Lance restore is a new version), so it tells nothing new.
  if (obs.version < state.version) return false;
  const before = state.adopted.observed;
  state.adopted.observed = obs;
  state.version = obs.version;
  const foundNew = before === null || before.version !== obs.version;
  if (foundNew) state.activityAtMs = nowMs;
  return foundNew;
}

/** A commit of Turnstile's looked at the table when it ended: that look is the latest. */
export function foldCommitObservation(state: TableState, obs: Observation | undefined): void {
  if (!state.adopted || obs === undefined) return;
  const before = state.adopted.observed;
  if (before !== null && before.atMs > obs.atMs) return;
  state.adopted.observed = obs;
}

export function onModeChanged(state: TableState, mode: AdoptedMode): void {
  if (state.adopted) state.adopted.mode = mode;
}

/** Bytes a compaction would rewrite, estimated from the observation: the small fragments' share of the table. */
export function predictedRewriteBytes(obs: Observation | null, kind: PeriodicKind): number {
  if (obs === null || obs.fragments === 0) return 0;
  if (kind === 'optimize' || kind === 'gc') return Math.round((obs.bytes * obs.smallFragments) / obs.fragments);
  return 0;
}
