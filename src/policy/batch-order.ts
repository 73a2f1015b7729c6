import type { PolicyEvent } from './types';

// The table workflow hands the core everything one activation delivered as one batch.
// Signals and updates arrive in history order. Activity results reach the shell through
// promise callbacks whose order follows the SDK's job order and how many promise steps
// each result takes on its way (which differs between kinds of unit), so the same
// history could give the same results in another order. The core's decisions may depend
// on that order; this puts every batch in one order that only its contents decide.

/** Operator and writer messages keep their arrival order; results follow, by unit; the timer goes last. */
export function canonicalOrder(batch: PolicyEvent[]): PolicyEvent[] {
  const messages = batch.filter((e) => rank(e) === 0);
  const results = batch.filter((e) => rank(e) === 1).sort((a, b) => compare(resultKey(a), resultKey(b)));
  const timers = batch.filter((e) => rank(e) === 2);
  return [...messages, ...results, ...timers];
}

function rank(e: PolicyEvent): 0 | 1 | 2 {
  switch (e.type) {
    case 'demand':
    case 'bump':
    case 'pause':
    case 'resume':
    case 'policyChanged':
      return 0;
    case 'timer':
      return 2;
    default:
      return 1;
  }
}

const resultKey = (e: PolicyEvent): string => `${'unitId' in e ? e.unitId : ''}\u0000${e.type}`;
const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
