import { clonePolicy, cloneState } from './clone';
import { byName, nextDueMs } from './time';
import type { Policy, TableState } from './types';
import { KINDS, type Kind, type PerKind } from './types';

const perKind = <T>(v: T): PerKind<T> => Object.fromEntries(KINDS.map((k: Kind) => [k, v])) as PerKind<T>;

export function initialState(args: { table: string; key: string; shards: string[]; policy: Policy; nowMs: number; groupMerges?: boolean }): TableState {
  const { policy, nowMs } = args;
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
      optimize: nextDueMs(nowMs, policy.periodSecs.optimize),
      index: nextDueMs(nowMs, policy.periodSecs.index),
      gc: nextDueMs(nowMs, policy.periodSecs.gc),
      // A new table learns what the generation store already holds right away.
      snapshot: nowMs,
    },
    snapshotInFlight: false,
    writePressure: 0,
    groupMerges: args.groupMerges ?? true,
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
  next.turn = null;
  next.snapshotInFlight = false;
  return next;
}
