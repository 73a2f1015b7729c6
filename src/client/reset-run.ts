import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { workflowIdForTable } from '../messages/names';

// The way out for a table run whose workflow task fails on every attempt (a history
// that no longer replays, a release's bug): Temporal's reset, to the run's first
// workflow task. The new run starts from the same input, the state the run before
// handed on at continue-as-new (at most one run, ~500 events, back), and hears again
// every signal the old run got since. Merges the old run committed meanwhile are merged
// again (the upsert keeps the row of higher seq) or skipped where gc deleted their
// generations (src/storage/gc-floor.ts); maintenance runs again when due.

const EventType = temporal.api.enums.v1.EventType;

/** A run that cannot be reset (not running, or no workflow task completed yet). */
export class ResetRefused extends Error {}

export interface RunReset {
  oldRunId: string;
  newRunId: string;
  /** The event the new run's history is copied through: the old run's first completed workflow task. */
  resetEventId: number;
}

export async function resetToRunStart(client: Client, table: string, reason: string): Promise<RunReset> {
  const handle = client.workflow.getHandle(workflowIdForTable(table));
  const run = await handle.describe();
  if (run.status.name !== 'RUNNING') throw new ResetRefused(`table ${table}: its workflow is ${run.status.name.toLowerCase()}, not running; nothing to reset`);
  // The first page of the history holds the first workflow task.
  const page = await client.workflowService.getWorkflowExecutionHistory({
    namespace: client.options.namespace,
    execution: { workflowId: handle.workflowId, runId: run.runId },
    maximumPageSize: 20,
  });
  const first = (page.history?.events ?? []).find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
  if (!first?.eventId) throw new ResetRefused(`table ${table}: run ${run.runId} has no completed workflow task yet; nothing to reset to`);
  const resetEventId = Number(first.eventId);
  const r: temporal.api.workflowservice.v1.IResetWorkflowExecutionResponse = await client.workflowService.resetWorkflowExecution({
    namespace: client.options.namespace,
    workflowExecution: { workflowId: handle.workflowId, runId: run.runId },
    workflowTaskFinishEventId: first.eventId,
    requestId: randomUUID(),
    reason,
    resetReapplyType: temporal.api.enums.v1.ResetReapplyType.RESET_REAPPLY_TYPE_SIGNAL,
  });
  return { oldRunId: run.runId, newRunId: r.runId ?? '', resetEventId };
}
