import { condition } from '@temporalio/workflow';

/**
 * Resolves once every callback the current activation queued has run: the SDK evaluates
 * a condition when it is registered and next only after the activation's promise
 * callbacks have all drained (or in a later activation, if none is under way).
 *
 * Why: without it the shell decided on whatever had reached its inbox when the first
 * event of an activation woke it, so its decisions depended on how many promise steps
 * each activity result took. Session 23 blamed a nondeterminism failure on that; it
 * came back, on workers catching up stale cached runs (cause there not found; such runs
 * are now replayed from history, workflows/stale-cache-guard.ts). Deciding once per activation is kept: the decisions
 * then depend only on what the history says the activation held.
 */
export function activationSettled(): Promise<void> {
  let evaluated = false;
  return condition(() => {
    const again = evaluated;
    evaluated = true;
    return again;
  });
}
