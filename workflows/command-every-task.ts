import { defaultPayloadConverter } from '@temporalio/common';
import type { WorkflowInterceptorsFactory, WorkflowInternalsInterceptor } from '@temporalio/workflow';

/**
 * Every workflow task that delivered history events completes with at least one command.
 *
 * Why: the SDK's core splits a history into activations at workflow tasks, except that it
 * takes a task that completed with no command, when the scan since the previous task saw
 * no command either and the next task was scheduled right after it, for a "workflow task
 * heartbeat" and replays it together with the next task, as ONE activation, at the next
 * task's time (sdk-core `find_end_index_of_next_wft_seq`, history_update.rs). The server
 * schedules a task right after a completion for another reason too: an update (a
 * writer's awaitMerged) that arrived while the task ran. The live run then decided on
 * two activations, a replay decides once, later, on both: when a deadline of the core
 * fell between the two task times the replay's decision differed (a commit where the
 * live run had scheduled a preparation), and every worker that replayed the run failed
 * with nondeterminism (CI of session 27, cluster faults; the recorded histories hold
 * the pattern in 17 of 261 runs). A command in every task that delivered events keeps
 * each such task its own activation on replay; the cheapest is a memo upsert (one
 * history event): the number of tasks that needed one, so the UI shows it.
 */

/** Memo key of the count of workflow tasks that carried no other command. */
export const QUIET_TASKS_MEMO = 'turnstileQuietTasks';

type Activation = Parameters<NonNullable<WorkflowInternalsInterceptor['activate']>>[0]['activation'];
type Job = NonNullable<Activation['jobs']>[number];
type Command = Parameters<NonNullable<WorkflowInternalsInterceptor['concludeActivation']>>[0]['commands'][number];

/** Jobs that come from no history event of their own (queries, updates, patch notices, cache eviction). */
const NOT_FROM_EVENTS = ['queryWorkflow', 'doUpdate', 'notifyHasPatch', 'updateRandomSeed', 'removeFromCache'] as const;

/** True if the activation delivered something a history event recorded (a signal, an activity's or a timer's outcome, the start). */
export function deliversEvents(jobs: readonly Job[]): boolean {
  return jobs.some((j) => !NOT_FROM_EVENTS.some((k) => j[k] != null));
}

/** True if the commands write at least one history event: a timer started and cancelled in the same task writes none, nor does a rejected update or a query answer. */
export function writesEvent(commands: readonly Command[]): boolean {
  const started = new Set(commands.flatMap((c) => (c.startTimer ? [c.startTimer.seq] : [])));
  const cancelled = new Set(commands.flatMap((c) => (c.cancelTimer ? [c.cancelTimer.seq] : [])));
  return commands.some((c) => {
    if (c.startTimer) return !cancelled.has(c.startTimer.seq);
    if (c.cancelTimer) return !started.has(c.cancelTimer.seq);
    if (c.updateResponse) return c.updateResponse.rejected == null;
    if (c.respondToQuery || c.scheduleLocalActivity || c.requestCancelLocalActivity) return false;
    return true;
  });
}

// Module state is per workflow run. Off until the workflow turns it on: runs recorded
// before the rule replay without the extra command.
let enabled = false;
let quietTasks = 0;

/** Called by the workflow (under its patch) at the start of a run. */
export function commandEveryTask(): void {
  enabled = true;
}

/** The internals interceptor: watches what each activation delivered and, if needed, adds the memo upsert. */
export function commandEveryTaskInterceptor(): WorkflowInternalsInterceptor {
  let events = false;
  return {
    activate(input, next) {
      if (deliversEvents(input.activation.jobs ?? [])) events = true;
      return next(input);
    },
    concludeActivation(input, next) {
      const delivered = events;
      events = false;
      const out = next(input);
      if (!enabled || !delivered || writesEvent(out.commands)) return out;
      quietTasks++;
      const memo: Command = { modifyWorkflowProperties: { upsertedMemo: { fields: { [QUIET_TASKS_MEMO]: defaultPayloadConverter.toPayload(quietTasks) } } } };
      return { commands: [...out.commands, memo] };
    },
  };
}

export const interceptors: WorkflowInterceptorsFactory = () => ({ internals: [commandEveryTaskInterceptor()] });
