import type { WorkflowInterceptorsFactory, WorkflowInternalsInterceptor } from '@temporalio/workflow';

/**
 * A worker drops a cached run that went stale instead of catching it up, and a copy
 * that a query handed events the run's next workflow task should have brought.
 *
 * When another worker ran some of a run's workflow tasks (the server sends a task past
 * the sticky worker when that one is slow to poll, busy or cut off), the worker that
 * still caches the run replays the missed tasks on top of its cached state the next time
 * it gets one. Those catch-ups failed with nondeterminism (TMPRL1100) where a replay of
 * the same history from the start did not: cluster faults in sessions 22-24, and two
 * in-process workers whose tasks bounce between them (test/integration/sticky-bounce).
 * The cause is not found; an activation that replays after this copy of the run had
 * already caught up with its history can only be such a catch-up, so it fails the
 * workflow task with this reason. The SDK then evicts the copy and the retry replays the
 * run from its history: the path every fresh worker takes.
 *
 * A copy has caught up once it ran a live activation, or once it answered a query: core
 * hands a query to a copy only after replaying everything before it, so a copy that a
 * worker built just to answer a query (a legacy query for a run it did not cache) is
 * caught up too, and went stale like any other. Session 25 found the gap: such a copy
 * was caught up later, unguarded, and once in a CI run its live decision (a preparation
 * of seqs 226-227) was one that a replay of the same history could not repeat (226-228),
 * so the run failed every replay after it.
 *
 * Session 28 found how a live copy comes to decide what its history cannot repeat: a query
 * that raced new events (QUERY_TAIL below, reproduced in test/integration/query-race).
 * Session 25's 226-227 against 226-228 fits it (the live copy knew one demand less than
 * the task that recorded its decision); whether the catch-up failures of sessions 22-24
 * were the same is not known, so the catch-up rule stays.
 */
export const interceptors: WorkflowInterceptorsFactory = () => guardInterceptors(staleCopyGuard());

/** The interceptors that run `guard` on every activation (a test bundles one guard rule alone). */
export function guardInterceptors(guard: ReturnType<typeof staleCopyGuard>): ReturnType<WorkflowInterceptorsFactory> {
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
}

type Activation = Parameters<NonNullable<WorkflowInternalsInterceptor['activate']>>[0]['activation'];
type Job = NonNullable<Activation['jobs']>[number];

/** Jobs that come from history events: signals and the outcomes of activities and timers. */
const fromEvents = (j: Job): boolean => j.signalWorkflow != null || j.resolveActivity != null || j.fireTimer != null;

/** sdk-core's id for the query of a query task (one the server sent straight to a worker, not with a workflow task). */
const LEGACY_QUERY_ID = 'legacy_query';

/** Workflow time of an activation, exact (seconds and nanoseconds), for ordering. */
const timeOf = (a: Pick<Activation, 'timestamp'>): [number, number] => [Number(a.timestamp?.seconds ?? 0), a.timestamp?.nanos ?? 0];
const notAfter = (a: [number, number], b: [number, number]): boolean => a[0] < b[0] || (a[0] === b[0] && a[1] <= b[1]);

/** Which of the guard's rules run: all of them for the table workflow; one alone in a test that checks it on a real server. */
export interface GuardRules {
  staleReplay: boolean;
  tailByTime: boolean;
  tailByLength: boolean;
}
const ALL_RULES: GuardRules = { staleReplay: true, tailByTime: true, tailByLength: true };

const tailError = () => new Error(`${QUERY_TAIL}: events that came after the last workflow task reached this copy with a query; replaying the run from its history at its next task`);

/** One copy's guard: call it on every activation; it throws on a replay after the copy caught up, and on a query's tail of new events. */
export function staleCopyGuard(rules: GuardRules = ALL_RULES): (activation: Pick<Activation, 'jobs' | 'isReplaying' | 'timestamp' | 'historyLength'>, batchIndex: number) => void {
  let caughtUp = false;
  let lastTime: [number, number] | null = null;
  /** History length after the last live activation, when it brought events (a tail if a query task's query follows at the same length). */
  let liveEventsThrough: number | null = null;
  return (activation, batchIndex) => {
    const jobs = activation.jobs ?? [];
    // Query-only activations are always marked replaying; they change no state.
    if (jobs.length > 0 && jobs.every((j) => j.queryWorkflow != null)) {
      // A query task's query after live events with nothing processed in between: they
      // came with the query (see QUERY_TAIL). A workflow task's live activation is always
      // followed by at least its own completion event, so a later query task is longer.
      const queryTask = jobs.some((j) => j.queryWorkflow?.queryId === LEGACY_QUERY_ID);
      if (rules.tailByLength && queryTask && liveEventsThrough !== null && activation.historyLength === liveEventsThrough) throw tailError();
      caughtUp = true;
      return;
    }
    if (batchIndex !== 0) return;
    liveEventsThrough = !activation.isReplaying && jobs.some(fromEvents) ? activation.historyLength ?? null : null;
    // Every workflow task brings a new start time; events delivered live at the time of
    // the last task came with a query instead (see QUERY_TAIL).
    const time = timeOf(activation);
    const tail = !activation.isReplaying && lastTime !== null && notAfter(time, lastTime) && jobs.some(fromEvents);
    lastTime = time;
    if (rules.tailByTime && tail) throw tailError();
    if (!activation.isReplaying) caughtUp = true;
    else if (caughtUp && rules.staleReplay) throw new Error(`${STALE_CACHE}: another worker ran tasks of this run since; replaying it from its history`);
  };
}

/**
 * A query's tail: the server sends a query straight to a worker when the run has no
 * workflow task pending, and the history that comes with it is read when the worker
 * takes the query, so it may end with events that came since (a writer's demand
 * signal). sdk-core hands those events to the workflow in an activation of their own, at
 * the time of the last workflow task, before the query, and the copy keeps them; the next
 * task then brings no new jobs, and sdk-core completes it with the commands that
 * activation decided, without asking the workflow. A replay delivers the same events
 * with that next task, at its time: the table decided differently (a commit where the
 * live run had prepared a follower), and the run's history could never be replayed again
 * (CI of session 27, cluster faults; reproduced in test/integration/query-race.test.ts).
 * Failing that activation fails the query (clients ask again) and evicts the copy; the
 * next task replays the run from its history.
 *
 * Two rules find a tail. By time: its events come at the time of the last workflow task
 * the history holds. That is this copy's last task unless a task failed since (CI of
 * session 29: another worker failed one; the server then sends the waiting query straight
 * to a worker, and the tail came at the failed task's later start time, so this rule
 * missed it). By length: a query task's query (sdk-core's id 'legacy_query') that comes
 * right after live events, with the history just as long as they left it, had them as
 * its tail; a workflow task's own live activation is always followed by at least its
 * completion event, so a later query task is longer. The second rule fails the query,
 * not the tail's activation; the tail's commands are dropped with the copy all the same.
 */
export const QUERY_TAIL = 'query raced new events';

/** The failure message's start, for logs and tests. */
export const STALE_CACHE = 'stale cached run';
