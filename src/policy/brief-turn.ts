import type { TableState } from './types';
import type { UnitHistory } from './unit-history';

/**
 * The turn was granted at `nowMs` to a direct merge: a commit of one small generation,
 * over in ~100 ms. The UI publisher (workflows/ui.ts) leaves such a turn out of the
 * search attributes unless a later activation still sees it, and a snapshot pulled in
 * at that instant waits for its end (idle.ts, settlePullIn).
 */
export function justGrantedDirect(state: TableState, nowMs: number): boolean {
  const t = state.turn;
  if (t === null || t.sinceMs !== nowMs || (t.riders?.length ?? 0) > 0) return false;
  const u = state.units.find((x) => x.id === t.unitId);
  return u?.kind === 'merge' && u.prepared?.direct === true;
}

/** A maintenance commit that took less than this last time is expected to be as brief again. */
export const BRIEF_COMMIT_MS = 1000;

/**
 * The turn was granted at `nowMs` and is expected to end before a list could show it:
 * a direct merge, or optimize, index or gc whose last commit on this table (in `history`)
 * took under BRIEF_COMMIT_MS. The UI publisher leaves it out unless a later activation
 * still sees it. Maintenance of a small table commits in tens of ms; publishing its
 * holder and clearing it again were two of a steady writer's history events per
 * maintenance turn. A commit that is slow for once is published at the table's next
 * activation (a seal's signal, a timer), and the `status` query shows it all along.
 */
export function justGrantedBrief(state: TableState, history: UnitHistory, nowMs: number): boolean {
  if (justGrantedDirect(state, nowMs)) return true;
  const t = state.turn;
  if (t === null || t.sinceMs !== nowMs || t.kind === 'merge') return false;
  for (let i = history.entries.length - 1; i >= 0; i--) {
    const e = history.entries[i]!;
    if (e.kind !== t.kind || e.grantedAtMs === undefined || e.outcome !== 'committed') continue;
    return e.endedAtMs - e.grantedAtMs < BRIEF_COMMIT_MS;
  }
  return false;
}
