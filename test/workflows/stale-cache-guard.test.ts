import { describe, expect, test } from 'vitest';
import { QUERY_TAIL } from '../../src/messages/errors';
import { STALE_CACHE, staleCopyGuard } from '../../workflows/stale-cache-guard';

// The guard's rule on its own (pure): a copy of a run that caught up with its history
// (ran live, or answered a query) must not replay again; the first replay of a fresh
// copy, however many activations long, is fine; and a live activation of events at the
// time of the last one is a query's tail. The real things: sticky-bounce.test.ts and
// query-race.test.ts.

const signal = { signalWorkflow: { signalName: 'demand' } };
const query = { queryWorkflow: { queryType: 'status' } };
// Each workflow task starts later than the one before: activations get increasing times.
type Timestamp = Parameters<ReturnType<typeof staleCopyGuard>>[0]['timestamp'];
let clock = 1_700_000_000;
const act = (isReplaying: boolean, ...jobs: object[]) => ({ isReplaying, jobs: jobs as never[], timestamp: { seconds: ++clock, nanos: 0 } as unknown as Timestamp });
const again = (a: ReturnType<typeof act>, isReplaying: boolean, ...jobs: object[]) => ({ isReplaying, jobs: jobs as never[], timestamp: a.timestamp });

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

  test('a copy built to answer a query, replaying again later, is refused too', () => {
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

  test('a live activation of events at the time of the last task is a query\'s tail: refused', () => {
    const guard = staleCopyGuard();
    guard(act(true, signal), 0);
    const last = act(true, signal);
    guard(last, 0);
    expect(() => guard(again(last, false, signal), 0)).toThrow(QUERY_TAIL);
    const live = act(false, signal);
    guard(live, 0);
    expect(() => guard(again(live, false, { resolveActivity: { seq: 1 } }), 0)).toThrow(QUERY_TAIL);
    const timer = act(false, signal);
    guard(timer, 0);
    expect(() => guard(again(timer, false, { fireTimer: { seq: 2 } }), 0)).toThrow(QUERY_TAIL);
  });

  test('at the same time without events (an update, a patch notice) or at a later time, nothing is refused', () => {
    const guard = staleCopyGuard();
    const a = act(false, signal);
    guard(a, 0);
    guard(again(a, false, { doUpdate: { id: 'u' } }), 0);
    guard(act(false, signal), 0);
    guard(act(false, { resolveActivity: { seq: 1 } }), 0);
  });
});
