import type { Decision, Kind } from './types';

// The table's own record of its last turn grants, for `turnstile why` and status --json:
// who got the turn, when, after how long a wait, and why it won (class, promotion, bump,
// aging: the core's `why`). Pure; the workflow shell keeps the list and carries it across
// continue-as-new.

export interface Grant {
  atMs: number;
  unitId: string;
  kind: Kind;
  /** From the core's decision, e.g. "class 1, promoted after 30 s". */
  why: string;
  /** Commit-ready until granted (0 when unknown). */
  waitedSecs: number;
  /** Merges committed in the same turn. */
  riders?: string[];
}

export const MAX_GRANTS = 20;

/** `log` with this activation's grants appended, the newest MAX_GRANTS kept. */
export function recordGrants(log: readonly Grant[], decisions: readonly Decision[], nowMs: number): Grant[] {
  const added: Grant[] = [];
  for (const d of decisions) {
    if (d.type !== 'commit') continue;
    const u = d.unit;
    const riders = d.riders?.map((r) => r.id);
    added.push({
      atMs: nowMs,
      unitId: u.id,
      kind: u.kind,
      why: d.why,
      waitedSecs: u.readySinceMs === null ? 0 : Math.max(0, nowMs - u.readySinceMs) / 1000,
      ...(riders?.length ? { riders } : {}),
    });
  }
  return added.length ? [...log, ...added].slice(-MAX_GRANTS) : [...log];
}
