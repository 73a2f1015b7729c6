import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { STALE_CACHE_GUARD_PATH } from '../../src/util/project-paths';
import { QUIET_BUNDLER_LOGGER } from '../../src/worker/create-worker';
import { sleep } from '../../src/util/sleep';

// What the probe-workflow tests (replay-merge, query-race) share: the probes bundled
// with or without the table workflow's stale-cache guard, waiting out a run's first
// task, and replaying a finished run.

const PROBES = path.join(__dirname, 'fixtures', 'merge-probe-workflow.ts');

/** The probe workflows, with the stale-cache guard (what the table workflow runs) or without. */
export const probeBundle = (guarded: boolean): Promise<{ code: string }> =>
  bundleWorkflowCode({ workflowsPath: PROBES, workflowInterceptorModules: guarded ? [STALE_CACHE_GUARD_PATH] : [], logger: QUIET_BUNDLER_LOGGER });

/** Resolves once the run's first workflow task completed and none is pending. */
export async function firstTaskDone(handle: WorkflowHandle): Promise<void> {
  for (;;) {
    const d = await handle.describe();
    if (d.raw.pendingWorkflowTask == null && d.historyLength >= 4) return;
    await sleep(20);
  }
}

/** The run's history replayed with `bundle`: null, or the replay's error as text. */
export async function replayError(bundle: { code: string }, handle: WorkflowHandle, history?: Awaited<ReturnType<WorkflowHandle['fetchHistory']>>): Promise<string | null> {
  try {
    await Worker.runReplayHistory({ workflowBundle: bundle, replayName: handle.workflowId }, history ?? (await handle.fetchHistory()));
    return null;
  } catch (e) {
    return String(e);
  }
}
