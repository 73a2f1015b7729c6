import type { Kind, Policy } from '../../src/policy/types';
import type { StepInfo } from '../../src/sim';
import { ensure } from './invariants';

/**
 * Property 2, the bounded wait, checked at every grant.
 *
 * Setting: runs without pauses, policy changes or commit failures (each of those
 * legitimately extends a wait: a pause by definition, a failed commit re-enters the
 * queue with its old readiness). Let U be a unit of kind K that became commit-ready at
 * r and was granted at g; W = maxTurnWaitSecs[K]; p = r + W, when U is promoted to
 * class 1; L = the longest turn (grant to release) observed before g.
 *
 * Asserted: g - r <= W + (k + 2 + floor(kK / maxConsecutiveTurns[K])) * L, where
 *   k  = units promoted before U (promotion deadline earlier; ties by readiness, id)
 *        that were commit-ready at p and not granted before p,
 *   kK = how many of those k are of kind K.
 *
 * Why: after p, U ranks above every unit except those k (overdue units go first in
 * class 1, by promotion deadline; units that become ready after p are promoted after
 * U). So a grant after p goes to one of the k, or to another kind because the streak
 * rule excludes K (docs/design.md invariant 4a, which holds even against class 1). Such a streak
 * exclusion needs K at its limit: once from the streak at p, and again only after
 * maxConsecutiveTurns[K] further K turns, which can only be among the kK. With the
 * turn held at p ending within L, and every grant after p lasting at most L, U is
 * granted within (1 + k + 1 + floor(kK / maxConsecutiveTurns[K])) turns after p. The
 * "k + 1" of the brief is the case without streak exclusions; it does not hold in
 * general (e.g. maxConsecutiveTurns.merge = 1: the turn held at p by merge/s0, then
 * optimize by the streak rule, then the overdue merge/s1 waits 2 L after p).
 */
export class WaitBound {
  private longestTurnMs = 0;
  private readonly episodes = new Map<string, { id: string; kind: Kind; readyMs: number; grantedMs: number | null }>();
  checked = 0;
  beyondPromotion = 0;

  constructor(private readonly policy: Policy) {}

  private deadline(e: { kind: Kind; readyMs: number }): number {
    return e.readyMs + this.policy.maxTurnWaitSecs[e.kind] * 1000;
  }

  onStep({ before, event, after, decisions, nowMs }: StepInfo): void {
    if ((event.type === 'committed' || event.type === 'commitFailed') && before.turn?.unitId === event.unitId) {
      this.longestTurnMs = Math.max(this.longestTurnMs, nowMs - before.turn.sinceMs);
    }
    for (const u of after.units) {
      if (u.readySinceMs === null) continue;
      const key = `${u.id}@${u.readySinceMs}`;
      if (!this.episodes.has(key)) this.episodes.set(key, { id: u.id, kind: u.kind, readyMs: u.readySinceMs, grantedMs: null });
    }
    for (const d of decisions) {
      if (d.type !== 'commit') continue;
      // Merges riding in the turn are granted with it; optimize and gc riding it were never commit-ready.
      for (const u of [d.unit, ...(d.riders ?? [])]) {
        if (u.rider) continue;
        const me = this.episodes.get(`${u.id}@${u.readySinceMs}`)!;
        me.grantedMs = nowMs;
        this.check(me, nowMs);
      }
    }
  }

  private check(me: { id: string; kind: Kind; readyMs: number }, g: number): void {
    this.checked++;
    const p = this.deadline(me);
    if (g <= p) return;
    this.beyondPromotion++;
    const ahead = [...this.episodes.values()].filter((v) => {
      if (v.id === me.id && v.readyMs === me.readyMs) return false;
      if (v.readyMs > p || (v.grantedMs !== null && v.grantedMs < p)) return false;
      const dv = this.deadline(v);
      return dv < p || (dv === p && (v.readyMs < me.readyMs || (v.readyMs === me.readyMs && v.id < me.id)));
    });
    const k = ahead.length;
    const kK = ahead.filter((v) => v.kind === me.kind).length;
    const turns = k + 2 + Math.floor(kK / this.policy.maxConsecutiveTurns[me.kind]);
    const bound = this.policy.maxTurnWaitSecs[me.kind] * 1000 + turns * this.longestTurnMs;
    ensure(g - me.readyMs <= bound, `${me.id} ready at ${me.readyMs}, granted at ${g} > bound ${bound} (k=${k}, kK=${kK}, L=${this.longestTurnMs})`);
  }
}
