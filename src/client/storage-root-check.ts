import { temporal } from '@temporalio/proto';
import { optionalTsToMs } from '@temporalio/common/lib/time';
import { reachedRoot } from '../storage/reached-root';
import type { TableClient } from './table-client';
import { rootMismatch } from './root-mismatch';

// The check every command that writes under TURNSTILE_DATA (table create and adopt, the
// writer, policy) makes first: one DescribeTaskQueue of the table's task queue.

/** A client whose storage root is not the one the table's workers use; nothing was written. */
export class StorageRootMismatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StorageRootMismatchError';
  }
}

/**
 * The same bound as a writer's pressure read: an unreachable cluster must not stop
 * seals, so a check the server does not answer in time is skipped.
 */
const CHECK_TIMEOUT_MS = 2000;

/**
 * Throws StorageRootMismatchError when live workers poll the client's task queue and
 * none of them uses `dataRoot` (root-mismatch.ts). Skipped, silently, when the server
 * does not answer or refuses the call (an API key without the permission): the check
 * guards against a wrong environment, and a failure to ask says nothing about that.
 */
export async function refuseOtherStorageRoot(tables: TableClient, dataRoot: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const { client, taskQueue } = tables;
  let pollers: temporal.api.taskqueue.v1.IPollerInfo[];
  try {
    const r = await client.connection.withDeadline(Date.now() + CHECK_TIMEOUT_MS, () =>
      client.workflowService.describeTaskQueue({
        namespace: client.options.namespace,
        taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      }),
    );
    pollers = r.pollers ?? [];
  } catch {
    return;
  }
  const why = rootMismatch(
    reachedRoot(dataRoot, env),
    taskQueue,
    pollers.map((p) => ({ identity: p.identity ?? '', lastAccessMs: optionalTsToMs(p.lastAccessTime) ?? null })),
    Date.now(),
  );
  if (why !== null) throw new StorageRootMismatchError(why);
}
