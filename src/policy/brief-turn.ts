import type { TableState } from './types';

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
