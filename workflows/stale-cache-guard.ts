import type { WorkflowInterceptorsFactory, WorkflowInternalsInterceptor } from '@temporalio/workflow';

/**
 * A worker drops a cached run that went stale instead of catching it up.
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

/** One copy's guard: call it on every activation; it throws on a replay after the copy caught up. */
export function staleCopyGuard(): (activation: Pick<Activation, 'jobs' | 'isReplaying'>, batchIndex: number) => void {
  let caughtUp = false;
  return (activation, batchIndex) => {
    const jobs = activation.jobs ?? [];
    // Query-only activations are always marked replaying; they change no state.
    if (jobs.length > 0 && jobs.every((j) => j.queryWorkflow != null)) {
      caughtUp = true;
      return;
    }
    if (batchIndex !== 0) return;
    if (!activation.isReplaying) caughtUp = true;
    else if (caughtUp) throw new Error(`${STALE_CACHE}: another worker ran tasks of this run since; replaying it from its history`);
  };
}

/** The failure message's start, for logs and tests. */
export const STALE_CACHE = 'stale cached run';
