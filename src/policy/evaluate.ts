import { cloneUnit } from './clone';
import { pickTurn, promotionAtMs, waitedMs, type TurnPick } from './order';
import { createUnits } from './units';
import type { Decision, TableState } from './types';

// The time-driven rules, run after every event. Running it twice at the same nowMs
// changes nothing, so a late or duplicate event can safely trigger it too.

function grant(state: TableState, pick: TurnPick, nowMs: number, decisions: Decision[]): void {
  const u = pick.unit;
  u.state = 'committing';
  state.turn = { unitId: u.id, kind: u.kind, sinceMs: nowMs, why: pick.why };
  state.streak = state.streak?.kind === u.kind ? { kind: u.kind, count: state.streak.count + 1 } : { kind: u.kind, count: 1 };
  const waitedSecs = waitedMs(u, nowMs) / 1000;
  state.counters.maxTurnWaitSecs[u.kind] = Math.max(state.counters.maxTurnWaitSecs[u.kind], waitedSecs);
  decisions.push({ type: 'commit', unit: cloneUnit(u), why: pick.why });
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

  if (!state.snapshotInFlight && state.dueAtMs.snapshot <= nowMs) {
    state.snapshotInFlight = true;
    decisions.push({ type: 'snapshot' });
  }

  for (const u of createUnits(state, nowMs)) decisions.push({ type: 'prepare', unit: cloneUnit(u) });

  if (state.turn === null) {
    const pick = pickTurn(state, nowMs);
    if (pick) grant(state, pick, nowMs, decisions);
  }
}
