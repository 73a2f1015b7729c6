import { clonePolicy, cloneState } from './clone';
import { applyPullIn, maxSnapshotSecs } from './idle';
import { firstDueMs, firstPhase } from './phase';
import { byName } from './time';
import type { PeriodicMark, Policy, TableState } from './types';
import { KINDS, type Kind, type PerKind, type PeriodicKind } from './types';

const perKind = <T>(v: T): PerKind<T> => Object.fromEntries(KINDS.map((k: Kind) => [k, v])) as PerKind<T>;

export const marks = (done: number | null): TableState['periodic'] => {
  const m = (): PeriodicMark => ({ planned: null, done });
  return { optimize: m(), index: m(), gc: m() };
};

export function initialState(args: { table: string; key: string; shards: string[]; policy: Policy; nowMs: number; adoptedUri?: string; configuredIndices?: number }): TableState {
  const { policy, nowMs } = args;
  const firstDue = (kind: PeriodicKind): number => firstDueMs(nowMs, policy.periodSecs[kind], firstPhase(args.table, kind));
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
    // Nothing has happened on a new table yet, so there is no burst of seals whose last
    // signal might be lost: it starts at the long period. Its first snapshot (now) or
    // first demand brings it to the short one if there is anything.
    snapshotEverySecs: maxSnapshotSecs(policy),
    // Version 0 and nothing merged: a new table gives optimize, index and gc nothing to do.
    periodic: marks(0),
    // A table created without indices never plans index (idle.ts, hasChanged) unless bumped.
    ...(args.configuredIndices !== undefined && args.adoptedUri === undefined ? { noIndices: args.configuredIndices === 0 } : {}),
    // An adopted table starts in shadow mode: it decides and records, commits nothing.
    ...(args.adoptedUri !== undefined ? { adopted: { uri: args.adoptedUri, mode: 'shadow' as const, observed: null } } : {}),
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
  // Riders go with a turn that never started: they are due still, and ride again or run on their own.
  next.units = next.units.filter((u) => u.state !== 'preparing' && !u.rider);
  for (const u of next.units) if (u.state === 'committing') u.state = 'ready';
  // The shell continues as new only with no commit in flight, so a turn still held here
  // was granted while the run drained and never started. Its grant is taken back whole:
  // left in the streak, a kind limited to one turn in a row (optimize, index, gc) lost
  // its next turn in the new run to a turn it never had (a bumped optimize waited behind
  // a merge that way).
  if (next.turn) next.streak = next.turn.streakBefore;
  next.turn = null;
  next.snapshotInFlight = false;
  // The commit a deferred pull-in waited for never ran in this run.
  applyPullIn(next);
  return next;
}
