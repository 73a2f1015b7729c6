import { temporal } from '@temporalio/proto';
import type { History } from './history';

const E = temporal.api.enums.v1.EventType;

/** Event types of commands, as sdk-core counts them (`is_command_event`). */
const COMMAND_EVENTS = new Set([
  E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
  E.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED,
  E.EVENT_TYPE_MARKER_RECORDED,
  E.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
  E.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
  E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED,
  E.EVENT_TYPE_TIMER_CANCELED,
  E.EVENT_TYPE_TIMER_STARTED,
  E.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
  E.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED,
  E.EVENT_TYPE_NEXUS_OPERATION_SCHEDULED,
  E.EVENT_TYPE_NEXUS_OPERATION_CANCEL_REQUESTED,
  E.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
  E.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
  E.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
  E.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
  E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
  E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_REJECTED,
  E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED,
]);

/**
 * Ids of the WorkflowTaskStarted events whose task a replay does not treat as its own
 * activation but merges with the next one. Mirrors sdk-core's split of a history into
 * activations (history_update.rs `find_end_index_of_next_wft_seq`): a task that failed or
 * timed out is skipped; a task that completed with no command, when no command event came
 * since the scan began, and after which the next task was scheduled at once, is taken for a
 * "workflow task heartbeat" and not ended at, unless an update accepted right after a
 * later task's completion was sequenced before that later task (then the split goes back
 * to the last task started before the update's sequencing event). The live run decided
 * on each task apart and the table workflow decides once per activation
 * (workflows/activation.ts), so a replay that merged two could decide differently. The
 * scan finds no such task in any recorded run (the update rule keeps apart the tasks an
 * update schedules at once), so it stays a check.
 */
export function tasksMergedOnReplay(history: History): number[] {
  const events = history.events ?? [];
  const ends = new Set<number>();
  const unskipped = new Set<number>();
  for (let from = 0; from < events.length; ) {
    const end = endOfNextSequence(events, from, unskipped);
    if (end === null) break;
    ends.add(end);
    from = end + 1;
  }
  return [...unskipped].filter((ix) => !ends.has(ix) && ix < lastStarted(events)).map((ix) => Number(events[ix]!.eventId));
}

type Events = NonNullable<History['events']>;

function lastStarted(events: Events): number {
  for (let i = events.length - 1; i >= 0; i--) if (events[i]!.eventType === E.EVENT_TYPE_WORKFLOW_TASK_STARTED) return i;
  return -1;
}

/** Index of the WorkflowTaskStarted that ends the activation beginning at `from` (null: none left); records the tasks it did not skip. */
function endOfNextSequence(events: Events, from: number, unskipped: Set<number>): number | null {
  let sawCommand = false;
  let sawCommandOrStart = false;
  const started: number[] = [];
  for (let ix = from; ix < events.length; ix++) {
    const e = events[ix]!;
    if (e.eventType != null && COMMAND_EVENTS.has(e.eventType)) sawCommand = sawCommandOrStart = true;
    if (e.eventType === E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED) sawCommandOrStart = true;
    if (e.eventType !== E.EVENT_TYPE_WORKFLOW_TASK_STARTED) continue;
    const next = events[ix + 1]?.eventType;
    if (next === E.EVENT_TYPE_WORKFLOW_TASK_FAILED || next === E.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT) continue;
    started.push(ix);
    unskipped.add(ix);
    if (next === E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED && events[ix + 2] != null) {
      const after = events[ix + 2]!;
      if (!sawCommand && after.eventType === E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED) continue;
      const seq = after.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequestSequencingEventId;
      if (seq != null) {
        const back = [...started].reverse().find((i) => Number(events[i]!.eventId) < Number(seq));
        if (back !== undefined) return back;
      }
      return ix;
    }
    if (sawCommandOrStart || next === undefined) return ix;
  }
  return null;
}
