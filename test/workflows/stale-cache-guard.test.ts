import { describe, expect, test } from 'vitest';
import { STALE_CACHE, staleCopyGuard } from '../../workflows/stale-cache-guard';

// The guard's rule on its own (pure): a copy of a run that caught up with its history
// (ran live, or answered a query) must not replay again; the first replay of a fresh
// copy, however many activations long, is fine. The real thing: sticky-bounce.test.ts.

const signal = { signalWorkflow: { signalName: 'demand' } };
const query = { queryWorkflow: { queryType: 'status' } };
const act = (isReplaying: boolean, ...jobs: object[]) => ({ isReplaying, jobs: jobs as never[] });

describe('staleCopyGuard', () => {
  test('a fresh copy replays its history, then runs live, then takes queries and live tasks', () => {
    const guard = staleCopyGuard();
    for (let i = 0; i < 5; i++) guard(act(true, signal), 0);
    guard(act(false, signal), 0);
    guard(act(true, query), 0);
    guard(act(false, signal), 0);
  });

  test('a copy that ran live and then replays is a stale copy caught up: refused', () => {
    const guard = staleCopyGuard();
    guard(act(true, signal), 0);
    guard(act(false, signal), 0);
    expect(() => guard(act(true, signal), 0)).toThrow(STALE_CACHE);
  });

  test('a copy built to answer a query, replaying again later, is refused too (session 25)', () => {
    const guard = staleCopyGuard();
    guard(act(true, signal), 0);
    guard(act(true, signal), 0);
    guard(act(true, query), 0);
    expect(() => guard(act(true, signal), 0)).toThrow(STALE_CACHE);
  });

  test('only the first batch of an activation is judged', () => {
    const guard = staleCopyGuard();
    guard(act(false, signal), 0);
    guard(act(true, signal), 1);
  });
});
