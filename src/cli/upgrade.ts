import type { Client } from '@temporalio/client';
import { countTableRuns, describeDeployment, nudgeTables, routeTo, routingSettled, type Deployment, type VersionStatus } from '../client/deployment';
import { int, positional, type Parsed } from './args';
import { UsageError } from '../messages/errors';
import { readConfig } from './context';

// `turnstile upgrade status | set-current BUILD_ID | ramp BUILD_ID --percent P`: the
// Worker Deployment's versions, which one new and continued-as-new table runs go to, and
// how many table runs each still holds (docs/operations.md, "Upgrading Turnstile").

export interface VersionRow {
  buildId: string;
  status: VersionStatus;
  /** Running table runs pinned to this version. */
  tableRuns: number;
  /** Nothing left on it: it is neither current nor ramping and no table run is pinned to it. */
  drained: boolean;
  createdAt: string | null;
}

export interface UpgradeStatus {
  deployment: string;
  current: string | null;
  ramping: { buildId: string; percent: number } | null;
  versions: VersionRow[];
  /** Table runs of no version (started by unversioned workers). */
  unversionedTableRuns: number;
}

async function withClient<T>(fn: (client: Client, deploymentName: string) => Promise<T>): Promise<T> {
  const config = readConfig();
  const { connectClient } = await import('../client/connect');
  const client = await connectClient(config.temporal);
  try {
    return await fn(client, config.temporal.deploymentName);
  } finally {
    await client.connection.close();
  }
}

export async function upgradeStatusOf(client: Client, deploymentName: string): Promise<UpgradeStatus> {
  const d: Deployment = await describeDeployment(client, deploymentName);
  const versions = await Promise.all(
    d.versions.map(async (v) => {
      const tableRuns = await countTableRuns(client, deploymentName, v.buildId);
      const routed = v.buildId === d.current || v.buildId === d.ramping?.buildId;
      return { buildId: v.buildId, status: v.status, tableRuns, drained: !routed && tableRuns === 0, createdAt: v.createdAt };
    }),
  );
  versions.sort((a, b) => (b.createdAt ?? '').localeCompare(a.createdAt ?? ''));
  return { deployment: deploymentName, current: d.current, ramping: d.ramping, versions, unversionedTableRuns: await countTableRuns(client, deploymentName, null) };
}

export function formatUpgradeStatus(s: UpgradeStatus): string {
  const lines = [
    `deployment ${s.deployment}: current ${s.current ?? 'none'}, ramping ${s.ramping ? `${s.ramping.buildId} at ${s.ramping.percent}%` : 'none'}`,
    `${'BUILD ID'.padEnd(24)} ${'STATUS'.padEnd(9)} ${'TABLE RUNS'.padStart(10)}  DRAINED`,
    ...s.versions.map((v) => `${v.buildId.padEnd(24)} ${v.status.padEnd(9)} ${String(v.tableRuns).padStart(10)}  ${v.drained ? 'yes' : 'no'}`),
  ];
  if (s.versions.length === 0) lines.push('(no worker has polled as a version of this deployment yet)');
  if (s.unversionedTableRuns > 0) lines.push(`${'(no version)'.padEnd(24)} ${''.padEnd(9)} ${String(s.unversionedTableRuns).padStart(10)}`);
  return lines.join('\n');
}

export async function status(p: Parsed): Promise<void> {
  const s = await withClient(upgradeStatusOf);
  console.log(p.flags.json ? JSON.stringify(s, null, 2) : formatUpgradeStatus(s));
}

const buildIdArg = (p: Parsed): string => {
  const id = positional(p, 0, 'BUILD_ID');
  if (!/^[A-Za-z0-9._+-]{1,200}$/.test(id)) throw new UsageError(`BUILD_ID: ${JSON.stringify(id)} is not a build id; accepted: one of the ids \`turnstile upgrade status\` lists`);
  return id;
};

/** How long set-current and ramp wait for the change to reach the task queues before the second nudge. */
const SETTLE_WAIT_MS = 120_000;

async function move(buildId: string, percent: number | null): Promise<void> {
  await withClient(async (client, deploymentName) => {
    try {
      await routeTo(client, deploymentName, buildId, percent, `turnstile-cli@${process.pid}`);
    } catch (e) {
      if (/has no version/.test((e as Error).message)) throw new UsageError(`BUILD_ID: ${(e as Error).message}`);
      throw e;
    }
    // Pinned runs learn of the change in their next workflow task: give every one a task
    // now, and again once the change has reached the task queues (a run told before
    // that may still have seen its old target).
    const except = percent === null ? buildId : null;
    const nudged = await nudgeTables(client, deploymentName, except);
    const settled = await routingSettled(client, deploymentName, SETTLE_WAIT_MS);
    if (settled) await nudgeTables(client, deploymentName, except);
    const what = percent === null ? `the current version of ${deploymentName}` : `ramping at ${percent}% in ${deploymentName}`;
    console.log(`${buildId} is ${what}; ${nudged} table run(s) on other versions told to check (each moves at its next continue-as-new, within seconds; \`turnstile upgrade status\` shows them)`);
    if (!settled) console.log(`the change was still reaching the task queues after ${SETTLE_WAIT_MS / 1000} s: tables move as it arrives, at the latest at their next wake-up`);
  });
}

export async function setCurrent(p: Parsed): Promise<void> {
  await move(buildIdArg(p), null);
}

export async function ramp(p: Parsed): Promise<void> {
  await move(buildIdArg(p), int(p, 'percent', 0, 100));
}
