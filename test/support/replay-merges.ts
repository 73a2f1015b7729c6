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
 * activation but merges with the next one: sdk-core's rule for a "workflow task
 * heartbeat" (history_update.rs `find_end_index_of_next_wft_seq`): no command event since
 * the previous task's start, this task completed with none, and the next task was
 * scheduled right after. The live run decided on the two tasks apart, so a replay that
 * merges them may decide differently (workflows/command-every-task.ts).
 */
export function tasksMergedOnReplay(history: History): number[] {
  const events = history.events ?? [];
  const merged: number[] = [];
  let sawCommand = false;
  for (let i = 0; i < events.length; i++) {
    const t = events[i]!.eventType;
    if (t != null && COMMAND_EVENTS.has(t)) sawCommand = true;
    if (t !== E.EVENT_TYPE_WORKFLOW_TASK_STARTED) continue;
    const next = events[i + 1]?.eventType;
    if (next === E.EVENT_TYPE_WORKFLOW_TASK_FAILED || next === E.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT) continue;
    if (next === E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED && events[i + 2]?.eventType === E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED && !sawCommand) {
      merged.push(Number(events[i]!.eventId));
      continue;
    }
    sawCommand = false;
  }
  return merged;
}
