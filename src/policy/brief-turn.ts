import type { TableState } from './types';

/**
 * The turn was granted at `nowMs` to a direct merge: a commit of one small generation,
 * over in ~100 ms, alone or with maintenance riding it (rides.ts: only kinds whose last
 * commit took under BRIEF_COMMIT_MS ride). The UI publisher (workflows/ui.ts) leaves
 * such a turn out of the search attributes unless a later activation still sees it, and
 * a snapshot pulled in at that instant waits for its end (idle.ts, settlePullIn).
 */
export function justGrantedDirect(state: TableState, nowMs: number): boolean {
  const t = state.turn;
  if (t === null || t.sinceMs !== nowMs) return false;
  const unit = (id: string) => state.units.find((x) => x.id === id);
  if (!(t.riders ?? []).every((id) => unit(id)?.rider === true)) return false;
  const u = unit(t.unitId);
  return u?.kind === 'merge' && u.prepared?.direct === true;
}

/** A maintenance commit that took less than this last time is expected to be as brief again (rides.ts, too). */
export const BRIEF_COMMIT_MS = 1000;

/**
 * The turn was granted at `nowMs` and is expected to end before a list could show it:
 * a direct merge, or optimize, index or gc whose last commit on this table took under
 * BRIEF_COMMIT_MS (state.lastCommitMs). The UI publisher leaves it out unless a later
 * activation still sees it. Maintenance of a small table commits in tens of ms;
 * publishing its holder and clearing it again were two history events per turn. A
 * commit that is slow for once is published at the table's next activation (a seal's
 * signal, a timer), and the `status` query shows it all along.
 */
export function justGrantedBrief(state: TableState, nowMs: number): boolean {
  if (justGrantedDirect(state, nowMs)) return true;
  const t = state.turn;
  if (t === null || t.sinceMs !== nowMs || t.kind === 'merge') return false;
  const ms = state.lastCommitMs?.[t.kind];
  return ms !== undefined && ms < BRIEF_COMMIT_MS;
}
