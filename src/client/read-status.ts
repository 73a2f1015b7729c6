import { workflowIdForTable } from '../names';
import * as msg from '../../workflows/messages';
import type { StatusView } from '../../workflows/messages';
import { withPreparationProgress } from './preparation-progress';
import type { ReadClient } from './read-client';

/** A table's status as operators see it: the state query with each preparation's last heartbeat joined in. */
export async function readStatus(reader: ReadClient, table: string): Promise<StatusView> {
  const id = workflowIdForTable(table);
  const [view, pending] = await Promise.all([reader.query<StatusView>(id, msg.state.name), reader.pendingActivities(id)]);
  return withPreparationProgress(view, pending, Date.now());
}
