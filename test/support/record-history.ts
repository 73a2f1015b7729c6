import fs from 'node:fs';
import path from 'node:path';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { temporal } from '@temporalio/proto';
import { version } from '../../package.json';
import { chainHistories, type History } from './history';

export const HISTORIES_DIR = path.resolve(__dirname, '..', 'histories');
/**
 * The histories of this release's workflow code, in a folder named by its version
 * (package.json). Runs are pinned to the build that started them, so a release replays
 * only its own histories: each release records anew and deletes the previous one's.
 */
export const RECORD_DIR = path.join(HISTORIES_DIR, version);

/**
 * Whether the run got as far as one completed workflow task. A run fetched the moment it
 * began (the continue-as-new the test just caused) has none, and replaying it waits
 * forever for a task that is not in the history.
 */
export function hasCompletedTask(history: History): boolean {
  return (history.events ?? []).some((e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
}

/**
 * With TURNSTILE_RECORD_HISTORIES=1, saves the workflow's history (every run of it, in
 * order) under test/histories/<release>/<name>-<n>.json for the replay test. Recording is opt-in so
 * an ordinary test run never rewrites checked-in files.
 */
export async function recordHistory(client: Client, handle: WorkflowHandle, name: string): Promise<void> {
  if (process.env.TURNSTILE_RECORD_HISTORIES !== '1') return;
  fs.mkdirSync(RECORD_DIR, { recursive: true });
  const runs = (await chainHistories(client, handle.workflowId)).filter(hasCompletedTask);
  for (const [i, h] of runs.entries()) {
    fs.writeFileSync(path.join(RECORD_DIR, `${name}-${i + 1}.json`), historyToJSON(h));
  }
}
