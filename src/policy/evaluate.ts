import { cloneUnit } from './clone';
import { pickTurn, promotionAtMs, turnOrder, waitedMs, type TurnPick } from './order';
import { markPlanned } from './idle';
import { ridesMerges } from './rides';
import { createUnits, isPeriodic, newUnit, wantedUnits } from './units';
import type { Decision, TableState, Unit } from './types';

// The time-driven rules, run after every event. Running it twice at the same nowMs
// changes nothing, so a late or duplicate event can safely trigger it too.

/** Most merges committed in one turn (the lead included). */
export const MAX_GROUP = 16;

/**
 * The merges that ride along in a merge's turn: those next in turn order after it, up to
 * the first unit of another kind; then the maintenance that rides merges (rides.ts). A commit's fixed cost (a Lance commit, a Temporal
 * turn) is then paid once for all shards that are ready, and no unit goes before one
 * that ranks ahead of it: the riders would have had the following turns anyway. Keys
 * belong to one shard each, so the batches never touch the same row.
 */
function ridersOf(state: TableState, pick: TurnPick, nowMs: number): Unit[] {
  const lead = pick.unit;
  if (lead.kind !== 'merge' || lead.solo) return [];
  const riders: Unit[] = [];
  // Batches prepared under a memory budget ride only while the turn's batches
  // together stay within the bound they were cut to, so the one commit fits a worker.
  const cap = lead.kind === 'merge' ? lead.prepared?.maxBatchBytes : undefined;
  let bytes = lead.kind === 'merge' ? (lead.prepared?.bytes ?? 0) : 0;
  for (const u of turnOrder(state, nowMs)) {
    if (u === lead) continue;
    if (u.kind !== 'merge') break;
    if (u.solo) continue;
    bytes += u.prepared?.bytes ?? 0;
    if (cap !== undefined && bytes > cap) break;
    riders.push(u);
    if (riders.length >= MAX_GROUP - 1) break;
  }
  return [...riders, ...maintenanceRiders(state, nowMs)];
}

/** optimize and gc that fell due and go with this merge's turn (rides.ts): made here, committing with it. */
function maintenanceRiders(state: TableState, nowMs: number): Unit[] {
  const out: Unit[] = [];
  for (const w of wantedUnits(state, nowMs)) {
    if (!isPeriodic(w.kind) || !ridesMerges(state, w.kind)) continue;
    const u = { ...newUnit(w, nowMs), rider: true as const };
    markPlanned(state, w.kind);
    state.units.push(u);
    out.push(u);
  }
  return out;
}

function grant(state: TableState, pick: TurnPick, nowMs: number, decisions: Decision[]): void {
  const u = pick.unit;
  const riders = ridersOf(state, pick, nowMs);
  state.turn = { unitId: u.id, kind: u.kind, sinceMs: nowMs, why: pick.why, ...(riders.length ? { riders: riders.map((r) => r.id) } : {}), streakBefore: state.streak };
  state.streak = state.streak?.kind === u.kind ? { kind: u.kind, count: state.streak.count + 1 } : { kind: u.kind, count: 1 };
  for (const x of [u, ...riders]) {
    x.state = 'committing';
    state.counters.maxTurnWaitSecs[x.kind] = Math.max(state.counters.maxTurnWaitSecs[x.kind], waitedMs(x, nowMs) / 1000);
  }
  decisions.push({ type: 'commit', unit: cloneUnit(u), why: pick.why, ...(riders.length ? { riders: riders.map(cloneUnit) } : {}) });
}

/** Whether a snapshot starts now; if so it is marked in flight. */
export function snapshotDue(state: TableState, nowMs: number): boolean {
  if (state.snapshotInFlight || state.dueAtMs.snapshot > nowMs) return false;
  state.snapshotInFlight = true;
  return true;
}

export function evaluate(state: TableState, nowMs: number, decisions: Decision[]): void {
  state.bumps = state.bumps.filter((b) => b.expiresAtMs > nowMs);

  for (const u of state.units) {
    if (u.state === 'backoff' && (u.notBeforeMs ?? 0) <= nowMs) {
      u.state = 'ready';
      u.notBeforeMs = null;
    }
    if ((u.state === 'ready' || u.state === 'backoff') && u.promotedAtMs === null) {
      // Recorded as the deadline itself, not the evaluation time, so it does not
      // depend on when the shell's timer happened to fire.
      const at = promotionAtMs(state, u);
      if (at !== null && at <= nowMs) u.promotedAtMs = at;
    }
  }

  if (snapshotDue(state, nowMs)) decisions.push({ type: 'snapshot' });

  for (const u of createUnits(state, nowMs)) decisions.push({ type: 'prepare', unit: cloneUnit(u) });

  if (state.turn === null) {
    const pick = pickTurn(state, nowMs);
    if (pick) grant(state, pick, nowMs, decisions);
  }
}
