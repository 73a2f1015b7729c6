import { ridesMerges } from './rides';
import type { PeriodicKind, TableState } from './types';

/** Longest a periodic kind's timer comes after its due time, unless it rides merges. */
export const PERIODIC_SLACK_MAX_MS = 60_000;

/**
 * How long after its due time a periodic kind's timer fires: a quarter of its period, at
 * most PERIODIC_SLACK_MAX_MS. A kind that falls due is started by whatever workflow task
 * comes next (evaluate() creates every unit whose time is up); on a table with writes
 * that is the next demand or commit, so the kind needs no timer firing and no workflow
 * task of its own (1,000 tables optimizing every 300 s: one workflow task less each).
 * Only a table that went quiet waits out the slack. A bump makes a kind due at once and
 * is acted on in its own workflow task, so it never waits.
 *
 * A kind that rides merges (rides.ts) waits the whole quarter for one, uncapped: after a
 * ride it falls due a period after that merge's commit ended, just after the seal that
 * made it, so on a table sealing once a minute the seal it can ride comes ~59.9 s after
 * it is due, and a 60 s wait would lose that race whenever the seal is a little late.
 */
export function periodicSlackMs(state: TableState, kind: PeriodicKind): number {
  const quarter = (state.policy.periodSecs[kind] * 1000) / 4;
  return ridesMerges(state, kind) ? quarter : Math.min(PERIODIC_SLACK_MAX_MS, quarter);
}
