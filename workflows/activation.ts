import { condition } from '@temporalio/workflow';

/**
 * Resolves once every callback the current activation queued has run: the SDK evaluates
 * a condition when it is registered and next only after the activation's promise
 * callbacks have all drained (or in a later activation, if none is under way).
 *
 * Why: without it the shell decided on whatever had reached its inbox when the first
 * event of an activation woke it, so its decisions depended on how many promise steps
 * each activity result took, and a replay could decide differently from the live run.
 * Deciding once per activation, the decisions depend only on what the history says the
 * activation held. (Nondeterminism on workers catching up stale cached runs has another,
 * unfound cause; such runs are replayed from history: workflows/stale-cache-guard.ts.)
 */
export function activationSettled(): Promise<void> {
  let evaluated = false;
  return condition(() => {
    const again = evaluated;
    evaluated = true;
    return again;
  });
}
