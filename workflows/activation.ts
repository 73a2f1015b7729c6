import { condition } from '@temporalio/workflow';

/**
 * Resolves once every callback the current activation queued has run: the SDK evaluates
 * a condition when it is registered and next only after the activation's promise
 * callbacks have all drained (or in a later activation, if none is under way).
 *
 * Why: the table workflow wakes when the first event of an activation lands in its
 * inbox, and without this it decided on what had landed by then. Which activity results
 * that was depended on how many promise steps each took, and a worker that caught up on
 * a run from its cache split one activation's results into two decisions where the
 * recorded run had made one: the commands differed and the run failed with
 * nondeterminism (cluster faults, session 23).
 */
export function activationSettled(): Promise<void> {
  let evaluated = false;
  return condition(() => {
    const again = evaluated;
    evaluated = true;
    return again;
  });
}
