import type { Client } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import { countTableRuns, nudgeTables, settleRouting } from '../client/deployment';
import { dropKeptBundle, keepBundle, keptBundles } from '../worker/kept-bundles';

// `turnstile dev` across releases: it keeps the workflow bundle of every release it ran
// (src/worker/kept-bundles.ts). At start, a kept bundle that table runs are still pinned
// to gets a worker of its own beside this release's; this release becomes the current
// version and every table is told to check; each moves at its next continue-as-new, and
// an old release's worker stops (its bundle deleted) once no run is pinned to it.

export interface DevWorker {
  worker: Worker;
  run: Promise<void>;
  close(): Promise<void>;
}

export interface ReleaseOptions {
  dataDir: string;
  client: Client;
  deploymentName: string;
  buildId: string;
  workflowCode: string;
  /** Starts a worker on a kept bundle file. */
  startWorker(bundleFile: string, buildId: string): Promise<DevWorker>;
  log(line: string): void;
}

/** How often the old releases' run counts are checked, and stragglers told again. */
const CHECK_EVERY_MS = 5_000;
const NUDGE_EVERY_MS = 60_000;

/**
 * Starts the workers of the previous releases that still have table runs, makes this
 * release current, and returns those workers with a stop function for the watcher
 * that retires them.
 */
export async function carryPreviousReleases(o: ReleaseOptions): Promise<{ previous: DevWorker[]; stopWatching(): void }> {
  keepBundle(o.dataDir, o.buildId, o.workflowCode);
  const previous = new Map<string, DevWorker>();
  for (const kept of keptBundles(o.dataDir)) {
    if (kept.buildId === o.buildId) continue;
    const runs = await countTableRuns(o.client, o.deploymentName, kept.buildId);
    if (runs === 0) {
      dropKeptBundle(o.dataDir, kept.buildId);
      continue;
    }
    previous.set(kept.buildId, await o.startWorker(kept.file, kept.buildId));
    o.log(`previous release ${kept.buildId}: ${runs} table run(s) pinned to it; its worker runs until they have moved to ${o.buildId}`);
  }
  const routing = await settleRouting(o.client, o.deploymentName, o.buildId, 'always', `turnstile-dev@${process.pid}`);
  if (routing.changed) o.log(`version ${o.buildId} is current; ${routing.nudged} table run(s) on other versions told to move`);

  let stopped = false;
  let lastNudge = Date.now();
  const retire = async () => {
    for (const [buildId, w] of previous) {
      if ((await countTableRuns(o.client, o.deploymentName, buildId)) > 0) continue;
      previous.delete(buildId);
      w.worker.shutdown();
      await w.run.catch(() => undefined);
      await w.close();
      dropKeptBundle(o.dataDir, buildId);
      o.log(`previous release ${buildId}: no table run left on it; its worker stopped`);
    }
    if (previous.size > 0 && Date.now() - lastNudge > NUDGE_EVERY_MS) {
      lastNudge = Date.now();
      await nudgeTables(o.client, o.deploymentName, o.buildId);
    }
  };
  const all = [...previous.values()];
  let busy = false;
  const timer = setInterval(() => {
    if (stopped || busy || previous.size === 0) return;
    busy = true;
    retire()
      .catch((e: unknown) => o.log(`previous releases not checked: ${(e as Error).message.split('\n')[0]}`))
      .finally(() => (busy = false));
  }, CHECK_EVERY_MS);
  timer.unref();
  return {
    previous: all,
    stopWatching() {
      stopped = true;
      clearInterval(timer);
    },
  };
}
