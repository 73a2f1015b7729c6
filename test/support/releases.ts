import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { bundleWorkflows } from '../../src/worker/create-worker';
import { buildIdOf } from '../../src/worker/build-id';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import type { History } from './history';

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

/** A run of a table workflow, named for failure messages. */
export interface NamedRun {
  id: string;
  history: History;
}

const hasCommit = (h: History): boolean => (h.events ?? []).some((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'commitMerge');

/** Replays `runs` with `release`'s bundle in one replay worker (one per run cost ~0.3 s of CPU each); the error of each run that failed, by id. */
async function replayErrors(release: Release, runs: NamedRun[], replayName: string): Promise<Map<string, string>> {
  const errors = new Map<string, string>();
  if (runs.length === 0) return errors;
  const histories = runs.map((r) => ({ workflowId: r.id, history: r.history }));
  for await (const r of Worker.runReplayHistories({ workflowBundle: { code: release.code }, replayName }, histories)) {
    if (r.error) errors.set(r.workflowId, String(r.error).slice(0, 300));
  }
  return errors;
}

/**
 * Every run replayed on the release that ran it (the build id of its first completed
 * task), and every run of `newer` that committed replayed on `older` too, where it must
 * fail: the releases differ in a way a patch gate would have had to cover. Returns what
 * went wrong, the runs seen per build id and how many runs were cross-checked.
 */
export async function replayByRelease(runs: NamedRun[], newer: Release, older: Release): Promise<{ failures: string[]; seen: Record<string, number>; crossChecked: number }> {
  const failures: string[] = [];
  const seen: Record<string, number> = {};
  const byRelease = new Map<Release, NamedRun[]>([
    [older, []],
    [newer, []],
  ]);
  for (const run of runs) {
    const buildId = buildIdOfHistory(run.history);
    const release = [older, newer].find((r) => r.buildId === buildId);
    if (!release) {
      failures.push(`${run.id}: run of unknown version ${buildId}`);
      continue;
    }
    seen[release.buildId] = (seen[release.buildId] ?? 0) + 1;
    byRelease.get(release)!.push(run);
  }
  for (const [release, own] of byRelease) {
    for (const [id, error] of await replayErrors(release, own, `own-${release.buildId}`)) failures.push(`${id} (${release.buildId}): ${error}`);
  }
  const cross = byRelease.get(newer)!.filter((r) => hasCommit(r.history));
  const crossErrors = await replayErrors(older, cross, `cross-${newer.buildId}`);
  for (const r of cross) if (!crossErrors.has(r.id)) failures.push(`${r.id}: a ${newer.buildId} run with commits replays on ${older.buildId} too`);
  return { failures, seen, crossChecked: cross.length };
}
