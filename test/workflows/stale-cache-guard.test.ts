import { describe, expect, test } from 'vitest';
import { QUERY_TAIL, STALE_CACHE, staleCopyGuard } from '../../workflows/stale-cache-guard';

// The guard's rule on its own (pure): a copy of a run that caught up with its history
// (ran live, or answered a query) must not replay again; the first replay of a fresh
// copy, however many activations long, is fine; and a live activation of events at the
// time of the last one is a query's tail. The real things: sticky-bounce.test.ts and
// query-race.test.ts.

const signal = { signalWorkflow: { signalName: 'demand' } };
const query = { queryWorkflow: { queryType: 'status', queryId: 'q-1' } };
// A query the server sent as a task of its own, not with a workflow task: sdk-core's id.
const queryTask = { queryWorkflow: { queryType: 'status', queryId: 'legacy_query' } };
// Each workflow task starts later than the one before, and its history is longer:
// activations get increasing times and lengths.
type Timestamp = Parameters<ReturnType<typeof staleCopyGuard>>[0]['timestamp'];
let clock = 1_700_000_000;
let length = 3;
const act = (isReplaying: boolean, ...jobs: object[]) => ({ isReplaying, jobs: jobs as never[], timestamp: { seconds: ++clock, nanos: 0 } as unknown as Timestamp, historyLength: (length += 6) });
const again = (a: ReturnType<typeof act>, isReplaying: boolean, ...jobs: object[]) => ({ isReplaying, jobs: jobs as never[], timestamp: a.timestamp, historyLength: a.historyLength });
/** The same history length as `a`, at a later time (a failed task's start, session 29). */
const later = (a: ReturnType<typeof act>, isReplaying: boolean, ...jobs: object[]) => ({ ...act(isReplaying, ...jobs), historyLength: a.historyLength });

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

  test('a query task right after live events, at their history length, had them as its tail: refused, whatever their time (session 29)', () => {
    const guard = staleCopyGuard();
    guard(act(true, signal), 0);
    guard(act(false, signal), 0);
    // The tail came at a failed task's start time, later than this copy's last task.
    const tail = { ...act(false, signal), historyLength: 77 };
    guard(tail, 0);
    expect(() => guard(later(tail, true, queryTask), 0)).toThrow(QUERY_TAIL);
    // Checked with the rule alone: the time rule did not see this tail.
    const lengthOnly = staleCopyGuard({ staleReplay: true, tailByTime: false, tailByLength: true });
    const timeOnly = staleCopyGuard({ staleReplay: true, tailByTime: true, tailByLength: false });
    for (const g of [lengthOnly, timeOnly]) g(act(false, signal), 0);
    const t2 = act(false, { resolveActivity: { seq: 1 } });
    lengthOnly(t2, 0);
    timeOnly(t2, 0);
    expect(() => lengthOnly(again(t2, true, queryTask), 0)).toThrow(QUERY_TAIL);
    timeOnly(again(t2, true, queryTask), 0);
  });

  test('queries that are not a query task\'s tail are answered', () => {
    const guard = staleCopyGuard();
    const live = act(false, signal);
    guard(live, 0);
    // A query that came with the workflow task itself (a server-assigned id), at its length.
    guard(again(live, true, query), 0);
    // A query task later: the history has grown by at least the task's completion.
    guard({ ...again(live, true, queryTask), historyLength: live.historyLength + 1 }, 0);
    // A query task after a live activation without events (an update), at its length.
    const update = act(false, { doUpdate: { id: 'u' } });
    guard(update, 0);
    guard(again(update, true, queryTask), 0);
    // A query task after a replay (a copy built to answer it), at the replay's length.
    const fresh = staleCopyGuard();
    const replayed = act(true, signal);
    fresh(replayed, 0);
    fresh(again(replayed, true, queryTask), 0);
  });
});
