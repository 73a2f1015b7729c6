import { status as grpcStatus } from '@grpc/grpc-js';
import { QUERY_TAIL } from '../messages/errors';
import { sleep } from '../util/sleep';

// Temporal refuses an update with RESOURCE_EXHAUSTED while the workflow has its maximum
// of updates in flight (`history.maxInFlightUpdates`, 10 unless raised; the dev server
// raises it, see src/server/dev-config.ts). Every awaitMerged is answered within a bound
// (workflows/table.ts), so a slot frees within that bound: an update refused this way
// is asked again after a growing pause instead of failing the caller. So is one refused
// because the workflow's last task failed (isTaskFailedState).

/** Whether `e` or one of its first causes matches: the client wraps the gRPC error. */
export function anyCause(e: unknown, test: (err: { code?: unknown; message?: unknown; details?: unknown }) => boolean): boolean {
  for (let at: unknown = e, depth = 0; at && depth < 5; at = (at as { cause?: unknown }).cause, depth++) {
    if (test(at as { code?: unknown; message?: unknown; details?: unknown })) return true;
  }
  return false;
}

/** Whether the message or details of `e` or one of its first causes match `pattern`. */
const mentions = (e: unknown, pattern: RegExp): boolean => anyCause(e, (err) => [err.message, err.details].some((m) => typeof m === 'string' && pattern.test(m)));

/** The server's "limit on number of concurrent in-flight updates has been reached". */
export function isUpdateLimit(e: unknown): boolean {
  return anyCause(e, (err) => (typeof err.message === 'string' && /in-flight updates|RESOURCE_EXHAUSTED/i.test(err.message)) || err.code === grpcStatus.RESOURCE_EXHAUSTED);
}

/**
 * The server's "Workflow Task in failed state" (FAILED_PRECONDITION): the workflow's last
 * task failed (its worker was killed in it, the cluster or its database restarted) and
 * the next attempt has not completed yet. Transient like the update limit: seen in the
 * cluster fault tests, where it failed a waiter that only had to ask again.
 */
export function isTaskFailedState(e: unknown): boolean {
  return mentions(e, /Workflow Task in failed state/i);
}

/**
 * The server's "query timed out before a worker could process it" (DEADLINE_EXCEEDED).
 * A query first waits on the queue of the worker that ran the table last (sticky) for up
 * to that worker's stickyQueueScheduleToStartTimeout (30 s, create-worker.ts), which is
 * also the history call's deadline when the caller sets none: a sticky worker that does
 * not take it (busy, or gone) times the query out before the server can hand it to any
 * worker (go.temporal.io/server v1.29.1 queryworkflow/api.go queryDirectlyThroughMatching).
 * The server then clears the stickiness, so asking again reaches any worker; and a query
 * changes nothing, so asking again is safe. Seen in CI on a status query after a gc turn.
 * A client-side deadline that ran out has another message and is not asked again.
 */
export function isQueryTimeout(e: unknown): boolean {
  return mentions(e, /query timed out before a worker could process it/i);
}

/**
 * The server's "consistent query buffer is full" (RESOURCE_EXHAUSTED): while the
 * workflow has a workflow task no worker has finished, the server holds one query for it
 * (history.MaxBufferedQueryCount, 1 by default) and refuses the next at once. Transient
 * while a worker runs; with none, noLiveWorker says so.
 */
export function isQueryBufferFull(e: unknown): boolean {
  return mentions(e, /consistent query buffer is full/i);
}

/**
 * Runs `fn` until it fails with something `transient` does not accept, pausing
 * `firstPauseMs` doubling to 2 s; gives up after `maxWaitMs`. `beforeAgain` may end it
 * early by throwing.
 */
async function retryWhile<T>(fn: () => Promise<T>, transient: (e: unknown) => boolean, maxWaitMs: number, firstPauseMs = 100, beforeAgain?: (e: unknown) => Promise<void>): Promise<T> {
  const start = Date.now();
  for (let pause = firstPauseMs; ; pause = Math.min(pause * 2, 2000)) {
    try {
      return await fn();
    } catch (e) {
      if (!transient(e) || Date.now() - start + pause > maxWaitMs) throw e;
      await beforeAgain?.(e);
      await sleep(pause);
    }
  }
}

/** Runs `fn` until it is not refused for the update limit or a failed workflow task; gives up after `maxWaitMs`. */
export function retryWhileBusy<T>(fn: () => Promise<T>, maxWaitMs = 60_000): Promise<T> {
  return retryWhile(fn, (e) => isUpdateLimit(e) || isTaskFailedState(e), maxWaitMs);
}

/**
 * How recent a worker's last poll of a task queue must be for the worker to count as
 * running: an idle worker's long poll lasts up to a minute (70 s on its side) before
 * it polls again.
 */
export const LIVE_POLL_MS = 90_000;

/** Why asking a timed-out query again is pointless (no worker has polled the table's task queue lately), or null. */
export function noLiveWorker(taskQueue: string, pollers: readonly { lastAccessMs: number | null }[], nowMs: number): string | null {
  if (pollers.some((p) => p.lastAccessMs !== null && nowMs - p.lastAccessMs <= LIVE_POLL_MS)) return null;
  return `no worker has polled task queue ${taskQueue} in the last ${LIVE_POLL_MS / 1000} s, so none can answer the table's query: start one (turnstile worker)`;
}

/**
 * Attempts of one workflow task after which it counts as failing for good, not as the
 * transient failure of a killed worker or a dropped cached copy (one or two attempts).
 */
export const STUCK_TASK_ATTEMPTS = 5;

/** Why asking a query of a run whose workflow task keeps failing is pointless, or null. */
export function stuckWorkflowTask(table: string, task: { attempt: number } | null): string | null {
  if (task === null || task.attempt < STUCK_TASK_ATTEMPTS) return null;
  return `table ${table}: its workflow task failed ${task.attempt - 1} times in a row, so no worker can answer its query and it merges nothing: see the failure in the Temporal UI, then docs/operations.md ("A table's workflow task keeps failing"; turnstile table reset)`;
}

/**
 * The table's own refusal of a query that raced new events (QUERY_TAIL,
 * workflows/stale-cache-guard.ts): the worker dropped its copy of the run, and the next ask is answered.
 */
const QUERY_RACE = new RegExp(QUERY_TAIL);
export function isQueryRace(e: unknown): boolean {
  return mentions(e, QUERY_RACE);
}

/**
 * Runs a query until a worker answers it (or it fails otherwise), for at most `maxWaitMs`
 * after the first try. The first pause is 1 s: the server clears the stickiness only
 * after its own wait on the sticky queue ends, a little after it answered the timeout,
 * and an ask that came sooner went to the sticky queue again (another 30 s, measured in
 * test/integration/stopped-sticky-worker.test.ts). After a timeout or a full query
 * buffer (another query already waits for the workflow's task) or a failed workflow
 * task, `whyNot` is asked first (noLiveWorker, stuckWorkflowTask): with no worker
 * running, or a task that keeps failing, the caller hears so at once, not after 90 s;
 * if it fails itself, the query is asked again.
 */
export function retryQuery<T>(fn: () => Promise<T>, opts: { maxWaitMs?: number; whyNot?: () => Promise<string | null> } = {}): Promise<T> {
  const { maxWaitMs = 90_000, whyNot } = opts;
  const beforeAgain = async (e: unknown): Promise<void> => {
    if (!whyNot || !(isQueryTimeout(e) || isQueryBufferFull(e) || isTaskFailedState(e))) return;
    const why = await whyNot().catch(() => null);
    if (why !== null) throw new Error(why, { cause: e });
  };
  return retryWhile(fn, (e) => isQueryTimeout(e) || isQueryBufferFull(e) || isTaskFailedState(e) || isQueryRace(e), maxWaitMs, 1000, beforeAgain);
}
