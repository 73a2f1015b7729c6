import type { Client } from '@temporalio/client';
import { liveRecords } from '../worker/registry';
import { describeDeployment } from './deployment';

// The mixed-version rule for adopted tables' active mode: releases before it know no
// adopted tables (a run they pick up would treat one as a table without shards and
// commit nothing, or worse, a later release's maintenance would meet theirs), so the
// switch to active is refused while any of their workers is live.

/** The first release whose workers carry out adopted tables' maintenance. */
export const ACTIVE_MODE_SINCE = '0.3.0';

/** The release in a build id (`<release>-<hash>`, src/worker/build-id.ts); null if it has none. */
export function releaseOf(buildId: string): string | null {
  const m = /^(\d+)\.(\d+)\.(\d+)(?=-)/.exec(buildId);
  return m ? m[0] : null;
}

/** a < b as dotted release numbers. */
export function releaseBefore(a: string, b: string): boolean {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < 3; i++) if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) < (pb[i] ?? 0);
  return false;
}

const lacksActiveMode = (buildId: string): boolean => {
  const r = releaseOf(buildId);
  return r === null || releaseBefore(r, ACTIVE_MODE_SINCE);
};

/**
 * Build ids of live workers that lack active mode: versions of the deployment that
 * still serve (current, ramping, draining) and worker records with a build id. Empty
 * when every live worker has it.
 */
export async function workersWithoutActiveMode(client: Client, deploymentName: string | null, dataRoot: string): Promise<string[]> {
  const out = new Set<string>();
  if (deploymentName !== null) {
    const d = await describeDeployment(client, deploymentName);
    for (const v of d.versions) {
      if ((v.status === 'current' || v.status === 'ramping' || v.status === 'draining') && lacksActiveMode(v.buildId)) out.add(v.buildId);
    }
  }
  for (const r of await liveRecords(dataRoot)) if (r.buildId !== undefined && lacksActiveMode(r.buildId)) out.add(r.buildId);
  return [...out].sort();
}
