import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { testWorkflowBundle } from './workflow-bundle';
import { chainHistories } from './history';
import { tasksMergedOnReplay } from './replay-merges';

/**
 * Replays every run of each workflow's continue-as-new chain from its history with the
 * current workflow code and returns one line per run that fails (empty: all replay), and
 * one per task that a replay would merge with the next (test/support/replay-merges.ts).
 *
 * Why: a run whose live decisions a replay cannot repeat fails only when some worker
 * happens to replay it (a restart, an eviction), so a test that only reads workers'
 * logs sees a fraction of them. Replaying every run at the end sees all. The histories
 * of failing runs are written to `saveDir` (when given) for a replay test to keep.
 */
export async function replayFailures(client: Client, workflowIds: string[], saveDir?: string): Promise<string[]> {
  const histories = [];
  for (const id of workflowIds) {
    for (const [i, history] of (await chainHistories(client, id)).entries()) {
      histories.push({ workflowId: `${id.replace(/\//g, '_')}-run${i + 1}`, history });
    }
  }
  const failures: string[] = [];
  const failed = new Set<string>();
  const fail = (workflowId: string, why: string) => (failures.push(`${workflowId}: ${why}`), failed.add(workflowId));
  for (const { workflowId, history } of histories) for (const id of tasksMergedOnReplay(history)) fail(workflowId, `the task started at event ${id} replays merged with the next`);
  for await (const r of Worker.runReplayHistories({ workflowBundle: await testWorkflowBundle(), replayName: 'replay-chains' }, histories)) if (r.error) fail(r.workflowId, r.error.message);
  if (saveDir && failed.size > 0) {
    fs.mkdirSync(saveDir, { recursive: true });
    for (const h of histories) if (failed.has(h.workflowId)) fs.writeFileSync(path.join(saveDir, `${h.workflowId}.json`), historyToJSON(h.history));
  }
  return failures;
}
