import { clonePolicy, cloneState } from './clone';
import { applyPullIn, maxSnapshotSecs } from './idle';
import { firstDueMs, firstPhase } from './phase';
import { byName, nextDueMs } from './time';
import type { PeriodicMark, Policy, Streak, TableState } from './types';
import { KINDS, type Kind, type PerKind, type PeriodicKind } from './types';

const perKind = <T>(v: T): PerKind<T> => Object.fromEntries(KINDS.map((k: Kind) => [k, v])) as PerKind<T>;

const marks = (done: number | null): TableState['periodic'] => {
  const m = (): PeriodicMark => ({ planned: null, done });
  return { optimize: m(), index: m(), gc: m() };
};

/**
 * `adaptive` false only for replays of runs recorded before the idle-cost rules (see
 * idle.ts), `spreadPeriodic` false only for replays of runs recorded before phase.ts.
 */
export function initialState(args: { table: string; key: string; shards: string[]; policy: Policy; nowMs: number; adaptive?: boolean; groupMerges?: boolean; pipelineMerges?: boolean; directMerges?: boolean; deferPullIn?: boolean; spreadPeriodic?: boolean; lazyPeriodic?: boolean }): TableState {
  const { policy, nowMs } = args;
  const spread = args.spreadPeriodic ?? true;
  const firstDue = (kind: PeriodicKind): number =>
    spread ? firstDueMs(nowMs, policy.periodSecs[kind], firstPhase(args.table, kind)) : nextDueMs(nowMs, policy.periodSecs[kind]);
  const names = [...new Set(args.shards)].sort(byName);
  return {
    table: args.table,
    key: args.key,
    policy: clonePolicy(policy),
    shards: names.map((shard) => ({ shard, sealedThroughSeq: 0, sealedRevision: 0, mergedThroughSeq: 0, heldReason: null })),
    units: [],
    turn: null,
    streak: null,
    paused: false,
    pausedKinds: [],
    bumps: [],
    counters: { turns: perKind(0), stalls: 0, retries: 0, maxTurnWaitSecs: perKind(0), merges: 0, rowsMerged: 0 },
    version: 0,
    dueAtMs: {
      optimize: firstDue('optimize'),
      index: firstDue('index'),
      gc: firstDue('gc'),
      // A new table learns what the generation store already holds right away.
      snapshot: nowMs,
    },
    snapshotInFlight: false,
    writePressure: 0,
    groupMerges: args.groupMerges ?? true,
    pipelineMerges: args.pipelineMerges ?? true,
    directMerges: args.directMerges ?? true,
    deferPullIn: args.deferPullIn ?? true,
    lazyPeriodic: args.lazyPeriodic ?? true,
    adaptive: args.adaptive ?? true,
    // Nothing has happened on a new table yet, so there is no burst of seals whose last
    // signal might be lost: it starts at the long period. Its first snapshot (now) or
    // first demand brings it to the short one if there is anything.
    snapshotEverySecs: maxSnapshotSecs(policy),
    // Version 0 and nothing merged: a new table gives optimize, index and gc nothing to do.
    periodic: marks(0),
  };
}

/** A state as an older run carried it, before some fields existed. */
export type CarriedState = Omit<TableState, 'adaptive' | 'snapshotEverySecs' | 'periodic' | 'policy'> &
  Partial<Pick<TableState, 'adaptive' | 'snapshotEverySecs' | 'periodic'>> & { policy: Omit<Policy, 'snapshotMaxIntervalSecs' | 'periodicWhenIdle'> & Partial<Policy> };

/**
 * Fills what a state carried across continue-as-new by an older run lacks: new policy
 * keys get their defaults, the snapshot period starts short (that run may have just seen
 * activity), and every periodic kind runs once more when its period is up (what changed
 * since its last run is unknown).
 */
export function upgradeState(carried: CarriedState, defaults: Policy, adaptive: boolean): TableState {
  return {
    ...carried,
    policy: { ...defaults, ...carried.policy },
    adaptive,
    snapshotEverySecs: carried.snapshotEverySecs ?? carried.policy.snapshotIntervalSecs,
    periodic: carried.periodic ?? marks(null),
  };
}

/**
 * The state handed to the next run at continue-as-new. Activities do not follow the
 * workflow into the new run, so units still preparing are dropped (they are recreated
 * with a fresh range), a unit whose commit was not started goes back to the queue with
 * its wait intact, and a snapshot in flight is forgotten (it is still due).
 */
export function carryOver(state: TableState): TableState {
  const next = cloneState(state);
  next.units = next.units.filter((u) => u.state !== 'preparing');
  for (const u of next.units) if (u.state === 'committing') u.state = 'ready';
  // The shell continues as new only with no commit in flight, so a turn still held here
  // was granted while the run drained and never started. Its grant is taken back whole:
  // left in the streak, a kind limited to one turn in a row (optimize, index, gc) lost
  // its next turn in the new run to a turn it never had (a bumped optimize waited behind
  // a merge that way).
  if (next.turn) next.streak = next.turn.streakBefore !== undefined ? next.turn.streakBefore : undoneStreak(next.streak);
  next.turn = null;
  next.snapshotInFlight = false;
  // The commit a deferred pull-in waited for never ran in this run.
  applyPullIn(next);
  return next;
}

/** A state carried from before streakBefore: one turn off the streak (the kind before it is unknown). */
function undoneStreak(s: Streak | null): Streak | null {
  return s === null || s.count <= 1 ? null : { kind: s.kind, count: s.count - 1 };
}
