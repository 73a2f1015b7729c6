import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { bundleWorkflows } from '../../src/worker/create-worker';
import { buildIdOf } from '../../src/worker/build-id';
import { PROJECT_ROOT } from '../../src/util/project-paths';

// Two releases of the table workflow for the upgrade tests: this checkout's (the bundle
// `npm run build` wrote, what worker processes run) and a "next release" whose workflow
// schedules one more activity before each commit, so neither replays the other's runs.

export interface Release {
  code: string;
  buildId: string;
  file: string;
}

export function thisRelease(): Release {
  const file = path.join(PROJECT_ROOT, 'dist', 'workflow-bundle.js');
  const code = fs.readFileSync(file, 'utf8');
  return { code, buildId: buildIdOf(code), file };
}

export async function nextRelease(dir: string): Promise<Release> {
  const { code } = await bundleWorkflows([path.join(__dirname, 'fixtures', 'extra-activity-before-commit.ts')]);
  const file = path.join(dir, 'next-release-workflow-bundle.js');
  fs.writeFileSync(file, code);
  return { code, buildId: buildIdOf(code), file };
}

/** The build id a run is pinned to (null: unversioned). */
export async function pinnedBuildId(client: Client, workflowId: string): Promise<string | null> {
  const d = await client.workflow.getHandle(workflowId).describe();
  return d.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId ?? null;
}

/** The build id of the worker that completed a history's first workflow task. */
export function buildIdOfHistory(h: { events?: { workflowTaskCompletedEventAttributes?: { deploymentVersion?: { buildId?: string | null } | null } | null }[] | null }): string | null {
  for (const e of h.events ?? []) {
    const id = e.workflowTaskCompletedEventAttributes?.deploymentVersion?.buildId;
    if (id) return id;
  }
  return null;
}
