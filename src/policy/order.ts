import { backlogOf } from './pressure';
import { byName, fmtSecs, plural } from './time';
import type { Bump, SchedClass, TableState, Unit } from './types';

// Turn order (docs/design.md invariants 3 and 4). Lowest effective class first. Within class 1 the
// units promoted by waiting maxTurnWaitSecs go first, in the order their promotion
// deadlines passed: promotion is a hard bound on waiting, and aged priority alone
// could let a high-base-priority class-1 merge stream overtake an overdue unit
// forever. Everything else: highest aged priority, then oldest readiness, then id.

export const waitedMs = (u: Unit, nowMs: number): number =>
  u.readySinceMs === null ? 0 : Math.max(0, nowMs - u.readySinceMs);

/** When the unit was (or will be) promoted to class 1 by waiting; null if not commit-ready. */
export function promotionAtMs(state: TableState, u: Unit): number | null {
  if (u.promotedAtMs !== null) return u.promotedAtMs;
  if (u.readySinceMs === null) return null;
  return u.readySinceMs + state.policy.maxTurnWaitSecs[u.kind] * 1000;
}

export function isOverdue(state: TableState, u: Unit, nowMs: number): boolean {
  const at = promotionAtMs(state, u);
  return at !== null && at <= nowMs;
}

const targets = (b: Bump, u: Unit): boolean =>
  'kind' in b.target ? b.target.kind === u.kind : b.target.unitId === u.id;

/** The unexpired bump with the lowest class that targets this unit or its kind. */
export function activeBump(state: TableState, u: Unit, nowMs: number): Bump | null {
  let best: Bump | null = null;
  for (const b of state.bumps) {
    if (b.expiresAtMs > nowMs && targets(b, u) && (best === null || b.class < best.class)) best = b;
  }
  return best;
}

export const agedPriority = (state: TableState, u: Unit, nowMs: number): number =>
  state.policy.basePriority[u.kind] + state.policy.agingPerSec * (waitedMs(u, nowMs) / 1000);

export interface ClassWhy {
  cls: SchedClass;
  why: string;
}

type Source = 'promoted' | 'bump' | 'backlog' | 'base';

/** The effective class and what gave it; `backlog` is passed in so sorting does not recompute it. */
function classSource(state: TableState, u: Unit, nowMs: number, backlog: number): { cls: SchedClass; source: Source; bump: Bump | null } {
  if (isOverdue(state, u, nowMs)) return { cls: 1, source: 'promoted', bump: null };
  let cls = state.policy.classes[u.kind];
  let source: Source = 'base';
  const bump = activeBump(state, u, nowMs);
  if (bump && bump.class < cls) {
    cls = bump.class;
    source = 'bump';
  }
  if (u.kind === 'merge' && cls > 1 && backlog > state.policy.softBacklog) {
    cls = 1;
    source = 'backlog';
  }
  return { cls, source, bump };
}

/** The effective class and the reason it has it (the `why` of a grant). */
export function classWhy(state: TableState, u: Unit, nowMs: number): ClassWhy {
  const p = state.policy;
  const backlog = backlogOf(state);
  const { cls, source, bump } = classSource(state, u, nowMs, backlog);
  switch (source) {
    case 'promoted':
      return { cls, why: `class 1, promoted after ${fmtSecs(p.maxTurnWaitSecs[u.kind] * 1000)} s (waited ${fmtSecs(waitedMs(u, nowMs))} s)` };
    case 'bump':
      return { cls, why: `class ${cls}, bumped: ${bump?.reason ?? ''}` };
    case 'backlog':
      return { cls, why: `class 1, backlog ${backlog} > softBacklog ${p.softBacklog}` };
    case 'base':
      return { cls, why: `class ${cls}, aged priority ${agedPriority(state, u, nowMs).toFixed(1)}` };
  }
}

export const effectiveClass = (state: TableState, u: Unit, nowMs: number): SchedClass =>
  classSource(state, u, nowMs, backlogOf(state)).cls;

interface Rank {
  cls: number;
  overdue: boolean;
  promotionAt: number;
  priority: number;
  readySince: number;
  id: string;
}

function rankOf(state: TableState, u: Unit, nowMs: number, backlog: number): Rank {
  const { cls, source } = classSource(state, u, nowMs, backlog);
  return {
    cls,
    overdue: source === 'promoted',
    promotionAt: promotionAtMs(state, u) ?? nowMs,
    priority: agedPriority(state, u, nowMs),
    readySince: u.readySinceMs ?? nowMs,
    id: u.id,
  };
}

function compareRanks(a: Rank, b: Rank): number {
  if (a.cls !== b.cls) return a.cls - b.cls;
  if (a.overdue !== b.overdue) return a.overdue ? -1 : 1;
  const d = a.overdue ? a.promotionAt - b.promotionAt : b.priority - a.priority;
  if (d !== 0) return d;
  return a.readySince - b.readySince || byName(a.id, b.id);
}

/** Units in turn order. */
export function sortForTurn(state: TableState, units: readonly Unit[], nowMs: number): Unit[] {
  const backlog = backlogOf(state);
  return units
    .map((u) => ({ u, r: rankOf(state, u, nowMs, backlog) }))
    .sort((a, b) => compareRanks(a.r, b.r))
    .map((x) => x.u);
}

export function blockedByOperator(state: TableState, u: Pick<Unit, 'kind' | 'shard'>): string | null {
  if (state.paused) return 'paused by operator';
  if (state.pausedKinds.includes(u.kind)) return `kind ${u.kind} paused by operator`;
  if (u.shard !== null) {
    const held = state.shards.find((s) => s.shard === u.shard)?.heldReason ?? null;
    if (held !== null) return `held: ${held}`;
  }
  return null;
}

/**
 * A merge that may commit now: nothing unmerged before its range (a pipelined follower
 * waits for its head). `<=`: a range whose start is merged already commits harmlessly
 * (commits are conditional on _seq), whereas `===` could leave it waiting forever.
 */
export const isMergeHead = (state: TableState, u: Pick<Unit, 'kind' | 'shard' | 'fromSeq'>): boolean =>
  u.kind !== 'merge' || u.shard === null || (u.fromSeq ?? 0) <= (state.shards.find((s) => s.shard === u.shard)?.mergedThroughSeq ?? 0) + 1;

/** Commit-ready and allowed to take the turn now (backoffs are released before this); a follower only after its head. */
export const isEligible = (state: TableState, u: Unit): boolean =>
  u.state === 'ready' && !u.emptyPrepared && blockedByOperator(state, u) === null && isMergeHead(state, u);

export interface TurnPick {
  unit: Unit;
  why: string;
  /** Set when the streak rule kept this kind out of the grant. */
  limited: { kind: Unit['kind']; count: number } | null;
}

/** The eligible units in turn order, without the streak rule. */
export function turnOrder(state: TableState, nowMs: number): Unit[] {
  return sortForTurn(state, state.units.filter((u) => isEligible(state, u)), nowMs);
}

/** The streak whose kind is excluded from the next grant, if the maxConsecutiveTurns rule applies. */
export function limitedStreak(state: TableState, eligible: readonly Unit[]): TurnPick['limited'] {
  const s = state.streak;
  if (s === null || s.count < state.policy.maxConsecutiveTurns[s.kind]) return null;
  return eligible.some((u) => u.kind !== s.kind) ? { kind: s.kind, count: s.count } : null;
}

/** Who gets the turn next (ignores whether the turn is free). */
export function pickTurn(state: TableState, nowMs: number): TurnPick | null {
  const order = turnOrder(state, nowMs);
  const limited = limitedStreak(state, order);
  const unit = limited ? order.find((u) => u.kind !== limited.kind) : order[0];
  if (!unit) return null;
  const { why } = classWhy(state, unit, nowMs);
  return { unit, why: limited ? `${why}; ${limited.kind} limited after ${plural(limited.count, 'turn')} in a row` : why, limited };
}
