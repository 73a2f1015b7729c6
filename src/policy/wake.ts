import { hasChanged } from './idle';
import { promotionAtMs } from './order';
import { PERIODIC_KINDS } from './units';
import { NEVER } from './time';
import type { TableState } from './types';

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
      if (!state.pausedKinds.includes(k) && !state.units.some((u) => u.id === k) && hasChanged(state, k)) consider(state.dueAtMs[k]);
    }
  }
  if (!state.snapshotInFlight) consider(state.dueAtMs.snapshot);
  return best === NEVER ? null : best;
}
