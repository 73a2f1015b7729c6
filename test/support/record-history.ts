import fs from 'node:fs';
import path from 'node:path';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { chainHistories } from './history';

export const HISTORIES_DIR = path.resolve(__dirname, '..', 'histories');
/**
 * One folder per generation of workflow code: when a change needs a `patched()` gate,
 * the histories of the previous generation stay checked in (they prove old runs still
 * replay) and new recordings go to a new folder.
 */
export const RECORD_DIR = path.join(HISTORIES_DIR, '13-pressure-at-once');

/**
 * With TURNSTILE_RECORD_HISTORIES=1, saves the workflow's history (every run of it, in
 * order) under test/histories/<generation>/<name>-<n>.json for the replay test. Recording is opt-in so
 * an ordinary test run never rewrites checked-in files.
 */
export async function recordHistory(client: Client, handle: WorkflowHandle, name: string): Promise<void> {
  if (process.env.TURNSTILE_RECORD_HISTORIES !== '1') return;
  fs.mkdirSync(RECORD_DIR, { recursive: true });
  for (const [i, h] of (await chainHistories(client, handle.workflowId)).entries()) {
    fs.writeFileSync(path.join(RECORD_DIR, `${name}-${i + 1}.json`), historyToJSON(h));
  }
}
