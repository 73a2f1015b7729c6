import { cloneState } from './clone';
import { evaluate, snapshotDue } from './evaluate';
import { settlePullIn } from './idle';
import { applyEvent } from './events';
import { backlogOf, writePressure } from './pressure';
import type { PolicyEvent, StepResult, TableState } from './types';
import { earliestWake } from './wake';

/**
 * The reducer the table workflow calls for every event. Pure: the input is copied, not
 * changed. Decisions come out in a fixed order (snapshot, prepares, commit, wakeAt),
 * and there is always exactly one wakeAt. Write pressure is kept in the state, where
 * the shell's UI publisher and the `state` query read it.
 */
export function step(input: TableState, event: PolicyEvent, nowMs: number): StepResult {
  return stepAll(input, [event], nowMs);
}

/**
 * Several events that happened at the same instant (one workflow activation): all are
 * applied before anything is decided, so a unit that became commit-ready in this
 * instant competes for the turn with the others instead of losing it to whichever
 * event happened to be queued first.
 */
export function stepAll(input: TableState, events: readonly PolicyEvent[], nowMs: number): StepResult {
  const state = cloneState(input);
  const decisions: StepResult['decisions'] = [];
  for (const event of events) applyEvent(state, event, nowMs);
  evaluate(state, nowMs, decisions);
  settlePullIn(state, nowMs);
  // A pull-in settled after evaluate() may be due already (the commit it waited for
  // outlasted snapshotIntervalSecs): the snapshot starts now, first as always.
  if (snapshotDue(state, nowMs)) decisions.unshift({ type: 'snapshot' });

  state.writePressure = writePressure(backlogOf(state), state.policy.softBacklog, state.policy.hardBacklog);
  const wake = earliestWake(state, nowMs);
  decisions.push({ type: 'wakeAt', atMs: wake?.atMs ?? null, reason: wake?.reason ?? null, id: wake?.id ?? null });
  return { state, decisions };
}
