// Guards a worker's cached copy of a table run against deciding what the run's history
// cannot repeat (after which no replay can follow the run: nondeterminism, TMPRL1100).
// Two cases fail the workflow task, so the SDK evicts the copy and the next task replays
// the run from its history:
// - QUERY_TAIL: signals that came with a query are handed to the workflow live, at the
//   last task's time, where a replay hands them over with the next task: an sdk-core
//   behaviour, shown on a minimal workflow by test/workflows/query-tail.test.ts. The
//   rule can go once that test finds no tail.
// - STALE_CACHE: a copy that had caught up replays again (another worker ran tasks of the
//   run since). Cause not found: on a minimal workflow, copies catching up were handed the
//   same jobs at the same times as a replay from history (over a thousand catch-up
//   activations); the one that differed came after its copy took a query's tail.

import type { WorkflowInterceptorsFactory, WorkflowInternalsInterceptor } from '@temporalio/workflow';
import { QUERY_TAIL } from '../src/messages/errors';

/**
 * A worker drops a cached run that went stale instead of catching it up, and a copy
 * that a query handed events the run's next workflow task should have brought.
 *
 * When another worker ran some of a run's workflow tasks (the server sends a task past
 * the sticky worker when that one is slow to poll, busy or cut off), the worker that
 * still caches the run replays the missed tasks on top of its cached state the next time
 * it gets one. Those catch-ups failed with nondeterminism (TMPRL1100) where a replay of
 * the same history from the start did not: in cluster faults, and with two
 * in-process workers whose tasks bounce between them (test/integration/sticky-bounce).
 * The cause is not found; an activation that replays after this copy of the run had
 * already caught up with its history can only be such a catch-up, so it fails the
 * workflow task with this reason. The SDK then evicts the copy and the retry replays the
 * run from its history: the path every fresh worker takes.
 *
 * A copy has caught up once it ran a live activation, or once it answered a query: core
 * hands a query to a copy only after replaying everything before it, so a copy that a
 * worker built just to answer a query (a legacy query for a run it did not cache) is
 * caught up too, and goes stale like any other. Left unguarded, such a copy caught up
 * later once made a live decision (a preparation of seqs 226-227) that a replay of the
 * same history could not repeat (226-228), so the run failed every replay after it.
 *
 * A live copy can also decide what its history cannot repeat when a query races new
 * events (QUERY_TAIL below, reproduced in test/integration/query-race). The 226-227
 * against 226-228 above fits that (the live copy knew one demand less than the task that
 * recorded its decision); whether the catch-up failures were the same is not known, so
 * the catch-up rule stays.
 */
export const interceptors: WorkflowInterceptorsFactory = () => {
  const guard = staleCopyGuard();
  return {
    internals: [
      {
        activate(input, next) {
          guard(input.activation, input.batchIndex);
          return next(input);
        },
      },
    ],
  };
};

type Activation = Parameters<NonNullable<WorkflowInternalsInterceptor['activate']>>[0]['activation'];

/** Jobs that come from history events: signals and the outcomes of activities and timers. */
const fromEvents = (j: NonNullable<Activation['jobs']>[number]): boolean => j.signalWorkflow != null || j.resolveActivity != null || j.fireTimer != null;

/** Workflow time of an activation, exact (seconds and nanoseconds), for ordering. */
const timeOf = (a: Pick<Activation, 'timestamp'>): [number, number] => [Number(a.timestamp?.seconds ?? 0), a.timestamp?.nanos ?? 0];
const notAfter = (a: [number, number], b: [number, number]): boolean => a[0] < b[0] || (a[0] === b[0] && a[1] <= b[1]);

/** One copy's guard: call it on every activation; it throws on a replay after the copy caught up, and on a query's tail of new events. */
export function staleCopyGuard(): (activation: Pick<Activation, 'jobs' | 'isReplaying' | 'timestamp'>, batchIndex: number) => void {
  let caughtUp = false;
  let lastTime: [number, number] | null = null;
  return (activation, batchIndex) => {
    const jobs = activation.jobs ?? [];
    // Query-only activations are always marked replaying; they change no state.
    if (jobs.length > 0 && jobs.every((j) => j.queryWorkflow != null)) {
      caughtUp = true;
      return;
    }
    if (batchIndex !== 0) return;
    // Every workflow task brings a new start time; events delivered live at the time of
    // the last task came with a query instead (see QUERY_TAIL).
    const time = timeOf(activation);
    const tail = !activation.isReplaying && lastTime !== null && notAfter(time, lastTime) && jobs.some(fromEvents);
    lastTime = time;
    if (tail) throw new Error(`${QUERY_TAIL}: events that came after the last workflow task reached this copy with a query; replaying the run from its history at its next task`);
    if (!activation.isReplaying) caughtUp = true;
    else if (caughtUp) throw new Error(`${STALE_CACHE}: another worker ran tasks of this run since; replaying it from its history`);
  };
}

/*
 * A query's tail (QUERY_TAIL): the server sends a query straight to a worker when the run has no
 * workflow task pending, and the history that comes with it is read when the worker
 * takes the query, so it may end with events that came since (a writer's demand
 * signal). sdk-core hands those events to the workflow in an activation of their own, at
 * the time of the last workflow task, before the query, and the copy keeps them; the next
 * task then brings no new jobs, and sdk-core completes it with the commands that
 * activation decided, without asking the workflow. A replay delivers the same events
 * with that next task, at its time: the table decided differently (a commit where the
 * live run had prepared a follower), and the run's history could never be replayed again
 * (seen in CI, cluster faults; reproduced in test/integration/query-race.test.ts).
 * Failing that activation fails the query (clients ask again) and evicts the copy; the
 * next task replays the run from its history.
 *
 * Only a query sent to the shared task queue can bring a tail: one sent to the worker's
 * sticky queue comes with no history at all (matching's getHistoryForQueryTask). Not
 * covered (seen in CI): another worker failed a task of the run, which clears the
 * sticky queue, and the waiting query then reached this copy on the shared queue with a
 * tail at the failed task's start time, later than this copy's last task. Nothing in an
 * activation tells that tail from a real task; a rule by history length (a query task
 * right after live events, at their length) would also
 * refuse every sticky query after a live task (query-race.test.ts, last test).
 */

/** The failure message's start, for logs and tests. */
export const STALE_CACHE = 'stale cached run';
