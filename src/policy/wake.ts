import { hasChanged } from './idle';
import { promotionAtMs } from './order';
import { PERIODIC_KINDS, type PeriodicKind } from './units';
import { NEVER } from './time';
import type { TableState } from './types';

/** Longest a periodic kind's timer comes after its due time. */
export const PERIODIC_SLACK_MAX_MS = 60_000;

/**
 * How long after its due time a periodic kind's timer fires: a quarter of its period, at
 * most PERIODIC_SLACK_MAX_MS. A kind that falls due is started by whatever workflow task
 * comes next (evaluate() creates every unit whose time is up); on a table with writes
 * that is the next demand or commit, so the kind needs no timer firing and no workflow
 * task of its own (1,000 tables optimizing every 300 s: one workflow task less each).
 * Only a table that went quiet waits out the slack. A bump makes a kind due at once and
 * is acted on in its own workflow task, so it never waits.
 */
export function periodicSlackMs(state: TableState, kind: PeriodicKind): number {
  return Math.min(PERIODIC_SLACK_MAX_MS, (state.policy.periodSecs[kind] * 1000) / 4);
}

/**
 * The one durable timer the shell keeps: the earliest deadline after nowMs at which
 * evaluate() would act. Deadlines already passed were acted on by evaluate(), or wait
 * for an event (a free preparation slot, a resume) rather than a timer, so they are
 * left out: including them would make the shell spin.
 */
export function nextWakeAt(state: TableState, nowMs: number): number | null {
  let best = NEVER;
  const consider = (at: number | null): void => {
    if (at !== null && at > nowMs && at < best) best = at;
  };
  for (const u of state.units) {
    if (u.state === 'ready' || u.state === 'backoff') {
      if (u.promotedAtMs === null) consider(promotionAtMs(state, u));
      if (u.state === 'backoff') consider(u.notBeforeMs);
    }
  }
  for (const b of state.bumps) consider(b.expiresAtMs);
  if (!state.paused) {
    for (const k of PERIODIC_KINDS) {
      // A kind with nothing changed needs no timer: the event that changes something
      // (a commit) runs evaluate(), which creates the unit if its period is up.
      if (!state.pausedKinds.includes(k) && !state.units.some((u) => u.id === k) && hasChanged(state, k)) consider(state.dueAtMs[k] + periodicSlackMs(state, k));
    }
  }
  if (!state.snapshotInFlight) consider(state.dueAtMs.snapshot);
  return best === NEVER ? null : best;
}
