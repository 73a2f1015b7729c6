import { periodicSlackMs } from './due-slack';
import { hasChanged } from './idle';
import { promotionAtMs } from './order';
import { PERIODIC_KINDS } from './units';
import { NEVER } from './time';
import { formatBytes } from '../config/bytes';
import type { Bump, TableState, Unit } from './types';

/** The deadline the table's one timer is armed for, and what happens then. */
export interface Wake {
  atMs: number;
  /** What the timer waits for, as the Temporal UI shows it on the timer: "promote merge/s0 to class 1 (waited 60 s)". */
  reason: string;
  /**
   * Which deadline this is, the same while it only moves later: the snapshot's moves
   * with every commit of a written table (its scan counts as one), so it is "snapshot";
   * any other is its reason at its time. The shell keeps a timer armed earlier for the
   * same deadline (workflows/alarm.ts).
   */
  id: string;
}

const bumpTarget = (b: Bump): string => ('kind' in b.target ? `kind ${b.target.kind}` : b.target.unitId);

function backoffReason(u: Unit): string {
  if (u.waitingForBytes !== undefined) return `${u.id} may take the turn again (no worker had ${formatBytes(u.waitingForBytes)} of headroom)`;
  return `retry commit of ${u.id} (attempt ${u.commitAttempts + 1})`;
}

/**
 * The one durable timer the shell keeps: the earliest deadline after nowMs at which
 * evaluate() would act, and what it is for. Deadlines already passed were acted on by
 * evaluate(), or wait for an event (a free preparation slot, a resume) rather than a
 * timer, so they are left out: including them would make the shell spin. Of deadlines
 * at the same instant the first one considered names it.
 */
export function earliestWake(state: TableState, nowMs: number): Wake | null {
  // The reason is worded only for the deadline that wins.
  const best = { atMs: NEVER, reason: null as (() => string) | null, moving: false };
  const consider = (at: number | null, reason: () => string, moving = false): void => {
    if (at !== null && at > nowMs && at < best.atMs) Object.assign(best, { atMs: at, reason, moving });
  };
  for (const u of state.units) {
    if (u.state === 'ready' || u.state === 'backoff') {
      if (u.promotedAtMs === null) consider(promotionAtMs(state, u), () => `promote ${u.id} to class 1 (waited ${state.policy.maxTurnWaitSecs[u.kind]} s)`);
      if (u.state === 'backoff') consider(u.notBeforeMs, () => backoffReason(u));
    }
  }
  for (const b of state.bumps) consider(b.expiresAtMs, () => `bump of ${bumpTarget(b)} to class ${b.class} expires`);
  if (!state.paused) {
    for (const k of PERIODIC_KINDS) {
      // A kind with nothing changed needs no timer: the event that changes something
      // (a commit) runs evaluate(), which creates the unit if its period is up.
      if (!state.pausedKinds.includes(k) && !state.units.some((u) => u.id === k) && hasChanged(state, k)) consider(state.dueAtMs[k] + periodicSlackMs(state, k), () => `${k} due (every ${state.policy.periodSecs[k]} s)`);
    }
  }
  if (!state.snapshotInFlight) consider(state.dueAtMs.snapshot, () => (state.adopted ? 'look at the adopted table' : 'snapshot of the generation store'), true);
  if (best.reason === null) return null;
  const reason = best.reason();
  return { atMs: best.atMs, reason, id: best.moving ? 'snapshot' : `${reason}@${best.atMs}` };
}

export function nextWakeAt(state: TableState, nowMs: number): number | null {
  return earliestWake(state, nowMs)?.atMs ?? null;
}

/** What the next timer of the table waits for, or null when it needs none. */
export function wakeReason(state: TableState, nowMs: number): string | null {
  return earliestWake(state, nowMs)?.reason ?? null;
}
