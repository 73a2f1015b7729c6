import { BRIEF_COMMIT_MS } from './brief-turn';
import { changeMark } from './idle';
import { blockedByOperator } from './order';
import type { Kind, MaintainedRun, TableState } from './types';

// Maintenance that rides a merge's turn. On a table that is written steadily, optimize
// and gc each cost an activity to plan, a workflow task, a turn with an activity of its
// own and another workflow task, every period: of a steady writer's ~16 history events
// per seal, ~3. When the kind's last commit on the table took under BRIEF_COMMIT_MS, it
// instead goes with the next merge's turn once it falls due: the merge's commit activity
// plans and runs it after its own upsert (activities/commit-merge.ts), and it ends with
// that turn. The merge then holds the turn for those few ms longer; nothing waits for a
// plan, because the plan only reads the table's metadata.
// When no merge is coming it waits for one until its slack is out (due-slack.ts). It
// runs as a unit of its own, as before, when it took longer last time (a big table's
// compaction should not hold up seals), when it has never committed on a table that is
// already past what a first run may cost in a ride (firstRunBrief), when an operator
// bumped it, when merges are paused, when no merge came within its slack, and after a
// ride that failed.

export type RidingKind = 'optimize' | 'gc';

export const isRidingKind = (k: Kind): k is RidingKind => k === 'optimize' || k === 'gc';

/**
 * A table this small has its first optimize and gc, never measured on it, ride anyway:
 * compacting 100,000 rows in 100 fragments and pruning 100 versions took 242 ms on 2
 * cores (1,000 fragments and versions: 1.8 s, mostly the pruning), well under
 * BRIEF_COMMIT_MS. A fleet written for the first time would otherwise run every table's
 * first optimize and gc as turns of their own, with plan activities, within one period.
 * A first ride that turns out slow (object storage, say) is measured like any other, and
 * the kind runs on its own from then on.
 */
export const FIRST_RIDE_MAX_ROWS = 100_000;
export const FIRST_RIDE_MAX_VERSIONS = 100;
/** Most generations merged into a table whose first gc still rides: it deletes at most their files. */
export const FIRST_RIDE_MAX_GENERATIONS = 100;

/** A kind never measured on this table (no lastCommitMs): whether its first run is small enough to ride. */
function firstRunBrief(state: TableState, kind: RidingKind): boolean {
  if (kind === 'optimize') return state.counters.rowsMerged <= FIRST_RIDE_MAX_ROWS && state.version <= FIRST_RIDE_MAX_VERSIONS;
  return changeMark(state, 'gc') <= FIRST_RIDE_MAX_GENERATIONS;
}

/** Whether `kind`, when it falls due, goes with a merge's turn instead of a unit of its own. */
export function ridesMerges(state: TableState, kind: Kind): kind is RidingKind {
  if (!isRidingKind(kind) || state.adopted) return false;
  const ms = state.lastCommitMs?.[kind];
  if (ms === undefined ? !firstRunBrief(state, kind) : ms >= BRIEF_COMMIT_MS) return false;
  if (blockedByOperator(state, { kind, shard: null }) !== null) return false;
  // A bumped kind runs as its own unit: what an operator asked for shows as such.
  return !state.bumps.some((b) => 'kind' in b.target && b.target.kind === kind);
}

export const mergesPaused = (state: TableState): boolean => state.paused || state.pausedKinds.includes('merge');

/** A merge will take the turn: one exists or is wanted now (`wanted`), and merges are not paused. */
export function mergeComing(state: TableState, wanted: boolean): boolean {
  if (mergesPaused(state)) return false;
  return wanted || state.units.some((u) => u.kind === 'merge');
}

/** A commit of `kind` took `ms`: whether its next one rides (ridesMerges), and its next turn is published (brief-turn.ts), go by it. */
export function recordCommitMs(state: TableState, kind: Kind, ms: number): void {
  if (kind === 'merge') return;
  state.lastCommitMs = { ...state.lastCommitMs, [kind]: Math.max(0, Math.round(ms)) };
}

/** A ride failed or did not run: the kind counts as not brief, so it runs as its own unit next time (and is measured again). */
export function stopRiding(state: TableState, kind: RidingKind): void {
  state.lastCommitMs = { ...state.lastCommitMs, [kind]: BRIEF_COMMIT_MS };
}

/** How a ride ended, for the rider's history entry: its run, or why there is none. */
export const rideOutcome = (run: MaintainedRun | undefined): { ok: boolean; error?: string } =>
  run === undefined ? { ok: false, error: 'did not run in the merge it rode (a worker without it)' } : run.error !== undefined ? { ok: false, error: run.error } : { ok: true };
