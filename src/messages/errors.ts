// Errors thrown on one side of a layer and recognised on the other: the client and the
// CLI share the first, the table workflow and its clients the second.

/** Bad input (a flag, an environment variable, a file one names): the CLI prints the message and exits 2. */
export class UsageError extends Error {}

/** A wait that gave up at its deadline (`wait-merged --timeout`): the CLI prints the message and exits EXIT_TIMED_OUT. */
export class TimedOutError extends Error {
  override name = 'TimedOutError';
}

/**
 * The start of the table workflow's refusal of a query that raced new events
 * (workflows/stale-cache-guard.ts says when): the worker dropped its copy of the run,
 * and a client that sees it asks again.
 */
export const QUERY_TAIL = 'query raced new events';
