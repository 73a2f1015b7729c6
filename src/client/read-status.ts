import { workflowIdForTable } from '../messages/names';
import type { StatusView, state } from '../../workflows/messages';
import { withPreparationProgress } from './preparation-progress';
import type { ReadClient } from './read-client';
import { noLiveWorker, retryQuery, stuckWorkflowTask } from './busy-retry';

// The query's wire name, checked against its one definition in workflows/messages.ts at
// compile time: importing that module at run time loads @temporalio/workflow (~90 ms).
const STATE_QUERY: (typeof state)['name'] = 'state';

/** A table's status as operators see it: the state query with each preparation's last heartbeat joined in. */
export async function readStatus(reader: ReadClient, table: string): Promise<StatusView> {
  const id = workflowIdForTable(table);
  const described = reader.describe(id);
  described.catch(() => undefined); // awaited below; a failure must not go unhandled meanwhile
  const whyNot = async (): Promise<string | null> => {
    // Described again: the task's attempts go on while the query is asked.
    const { taskQueue, workflowTask } = await reader.describe(id);
    return stuckWorkflowTask(table, workflowTask) ?? (taskQueue === null ? null : noLiveWorker(taskQueue, await reader.pollers(taskQueue), Date.now()));
  };
  const view = await retryQuery(() => reader.query<StatusView>(id, STATE_QUERY), { whyNot });
  return withPreparationProgress(view, (await described).pending, Date.now());
}
