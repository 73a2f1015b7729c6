import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';

/**
 * A worker drops a cached run that went stale instead of catching it up.
 *
 * When another worker ran some of a run's workflow tasks (the server sends a task past
 * the sticky worker when that one is slow to poll, busy or cut off), the worker that
 * still caches the run replays the missed tasks on top of its cached state the next time
 * it gets one. Those catch-ups failed with nondeterminism (TMPRL1100) where a replay of
 * the same history from the start did not: cluster faults in sessions 22-24, and two
 * in-process workers whose tasks bounce between them (test/integration/sticky-bounce).
 * The cause is not found; an activation that replays after this copy of the run already
 * ran live can only be such a catch-up, so it fails the workflow task with this reason.
 * The SDK then evicts the copy and the retry replays the run from its history: the path
 * every fresh worker takes, and the one no failure was ever seen on.
 */
export const interceptors: WorkflowInterceptorsFactory = () => {
  let wentLive = false;
  return {
    internals: [
      {
        activate(input, next) {
          const jobs = input.activation.jobs ?? [];
          // Query-only activations are always marked replaying; they change no state.
          const queryOnly = jobs.length > 0 && jobs.every((j) => j.queryWorkflow != null);
          if (!queryOnly && input.batchIndex === 0) {
            if (!input.activation.isReplaying) wentLive = true;
            else if (wentLive) throw new Error(`${STALE_CACHE}: another worker ran tasks of this run since; replaying it from its history`);
          }
          return next(input);
        },
      },
    ],
  };
};

/** The failure message's start, for logs and tests. */
export const STALE_CACHE = 'stale cached run';
