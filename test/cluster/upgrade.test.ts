import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { clusterDown, clusterUp } from '../../src/cluster/cluster';
import type { ClusterState } from '../../src/cluster/state';
import { connectClient } from '../../src/client/connect';
import { describeDeployment } from '../../src/client/deployment';
import { TableClient } from '../../src/client/table-client';
import { TableWriter, workflowArgsFor } from '../../src/client/table-writer';
import { createTableMeta } from '../../src/storage/generation-store';
import { shardNames, workflowIdForTable } from '../../src/messages/names';
import { installQuietRuntime } from '../../src/worker/runtime';
import { liveRecords } from '../../src/worker/registry';
import { DEFAULT_DEPLOYMENT_NAME } from '../../src/worker/build-id';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import type { UpgradeStatus } from '../../src/cli/upgrade';
import { expectMergedExactly } from '../support/expect-exact';
import { chainHistories } from '../support/history';
import { Load } from '../support/load';
import { nextRelease, pinnedBuildId, replayByRelease, thisRelease, type NamedRun, type Release } from '../support/releases';
import { findTool, POSTGRES, skipWithout } from '../support/tools';
import { clusterBinaries } from './cluster-bins';
import { sleep } from '../../src/util/sleep';

// A blue-green upgrade of the table workflow on the local cluster under load: 10 tables
// (7 with writers sealing continuously, 3 idle) on this release's worker processes (v1);
// workers of a next release (v2: one more activity before every commit, which v1 cannot
// replay) start beside them; `turnstile upgrade set-current v2` moves every table at its
// next continue-as-new; v1 drains and its workers stop. Then the rollback, the same move
// back. Every table exact at the end, no nondeterminism in any run, every run replays on
// its own version's bundle.

const execFileP = promisify(execFile);
const pg = findTool(POSTGRES);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-upgrade-'));
const BUSY = 7;
const IDLE = 3;
const names = [...Array.from({ length: BUSY }, (_, i) => `busy${i}`), ...Array.from({ length: IDLE }, (_, i) => `idle${i}`)];
let state: ClusterState;
let client: Client;
let v1: Release;
let v2: Release;
const loads = new Map<string, Load>();
const moves: Record<string, Record<string, number>> = {};

async function cli(args: string[], extraEnv: Record<string, string> = {}): Promise<string> {
  const env = { ...process.env, TEMPORAL_ADDRESS: state.address, TEMPORAL_NAMESPACE: state.namespace, TURNSTILE_DATA: state.dataRoot, ...extraEnv };
  const { stdout } = await execFileP(process.execPath, [path.join(PROJECT_ROOT, 'scripts', 'turnstile.mjs'), ...args], { env });
  return stdout;
}

async function until(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    await sleep(500);
  }
}

/** Seconds from `sinceMs` until `holds` first held for each of `items`; throws after `timeoutMs`. */
async function secondsUntilEach(what: string, items: string[], sinceMs: number, timeoutMs: number, holds: (item: string) => Promise<boolean>): Promise<Record<string, number>> {
  const took: Record<string, number> = {};
  await until(what, timeoutMs, async () => {
    await Promise.all(
      items
        .filter((t) => took[t] === undefined)
        .map(async (t) => {
          if (await holds(t)) took[t] = (Date.now() - sinceMs) / 1000;
        }),
    );
    return Object.keys(took).length === items.length;
  });
  return took;
}

/** Makes `to` current with the CLI and records how long each table took to be pinned to it. */
async function moveAll(label: string, to: Release): Promise<void> {
  const started = Date.now();
  const out = await cli(['upgrade', 'set-current', to.buildId]);
  expect(out).toContain(`${to.buildId} is the current version`);
  // The CLI saw the change reach every task queue and told the tables a second time.
  expect(out).not.toContain('still reaching the task queues');
  const took = await secondsUntilEach(`every table pinned to ${to.buildId}`, names, started, 240_000, async (t) => (await pinnedBuildId(client, workflowIdForTable(t)).catch(() => null)) === to.buildId);
  moves[label] = took;
  const secs = (ts: string[]) => ts.map((t) => took[t]!);
  console.log(`[upgrade] ${label}: busy tables moved in ${Math.max(...secs(names.slice(0, BUSY))).toFixed(1)} s at most, idle in ${Math.max(...secs(names.slice(BUSY))).toFixed(1)} s at most (${JSON.stringify(took)})`);
}

async function upgradeStatus(): Promise<UpgradeStatus> {
  return JSON.parse(await cli(['upgrade', 'status', '--json'])) as UpgradeStatus;
}

beforeAll(async () => {
  if ('skip' in pg) return;
  // The suite runs worker processes unversioned (vitest.config.ts); these are versions of the default deployment.
  process.env.TURNSTILE_DEPLOYMENT = DEFAULT_DEPLOYMENT_NAME;
  installQuietRuntime();
  fs.chmodSync(dir, 0o755);
  v1 = thisRelease();
  v2 = await nextRelease(dir);
  expect(v2.buildId).not.toBe(v1.buildId);
  state = await clusterUp({ dir, nodes: 2, workers: 2, binaries: await clusterBinaries() });
  client = await connectClient({ address: state.address, namespace: state.namespace });
  // The first version of the deployment makes itself current: tables start on it.
  await until('v1 current', 90_000, async () => (await describeDeployment(client, DEFAULT_DEPLOYMENT_NAME)).current === v1.buildId);
  const tables = new TableClient(client, 'turnstile');
  for (const name of names) {
    const meta = await createTableMeta(state.dataRoot, { name, key: 'id', shards: shardNames(2), indices: [] });
    await tables.start({ ...workflowArgsFor(meta), policy: { periodSecs: { optimize: 0, index: 0, gc: 0 } } });
    const load = new Load(await TableWriter.open(tables, state.dataRoot, name), { rowsPerGeneration: 100, keySpan: 1500, pauseMs: 2000 });
    loads.set(name, load);
    if (name.startsWith('busy')) load.start();
  }
  // The idle tables get their generations now, and then nothing more.
  for (const name of names.slice(BUSY)) {
    const l = loads.get(name)!;
    l.start();
    await sleep(1500);
    await l.stop();
  }
  for (const name of names) expect(await pinnedBuildId(client, workflowIdForTable(name))).toBe(v1.buildId);
}, 20 * 60_000);

afterAll(async () => {
  for (const l of loads.values()) await l.stop().catch(() => undefined);
  await client?.connection.close();
  if (state) await clusterDown(dir);
  console.log(`[upgrade] move times (s from set-current to pinned): ${JSON.stringify(moves)}`);
  if (process.env.TURNSTILE_KEEP_CLUSTER !== '1') fs.rmSync(dir, { recursive: true, force: true });
}, 120_000);

describe('a blue-green upgrade of the table workflow on the local cluster', () => {
  skipWithout(pg);
  test('v2 workers beside v1, v2 made current: every table moves, v1 drains, v1 workers stop', async () => {
    // The operator's commands (README "Upgrading Turnstile"); the next release's bundle by file.
    await cli(['cluster', 'add-workers', '--workers', '2', '--dir', dir], { TURNSTILE_WORKFLOW_BUNDLE: v2.file });
    await until('v2 polling', 90_000, async () => (await describeDeployment(client, DEFAULT_DEPLOYMENT_NAME)).versions.some((v) => v.buildId === v2.buildId));
    // Polling is not current: nothing moves by itself.
    expect((await upgradeStatus()).current).toBe(v1.buildId);
    await moveAll('upgrade', v2);
    const s = await upgradeStatus();
    expect(s.current).toBe(v2.buildId);
    expect(s.versions.find((v) => v.buildId === v1.buildId)).toMatchObject({ tableRuns: 0, drained: true });
    expect(s.versions.find((v) => v.buildId === v2.buildId)).toMatchObject({ tableRuns: names.length, drained: false });
    // The server's own drainage check agrees (its visibility grace period is seconds here).
    await until('v1 drained (server)', 120_000, async () => (await describeDeployment(client, DEFAULT_DEPLOYMENT_NAME)).versions.find((v) => v.buildId === v1.buildId)?.status === 'drained');
    expect(await cli(['cluster', 'stop-workers', '--build', v1.buildId, '--dir', dir])).toContain('stopped worker0, worker1');
    // Only v2 workers now: every busy table goes on merging. The bound is generous because the
    // suite shares two cores with other files; a table that stopped would still miss it.
    const tables = new TableClient(client, 'turnstile');
    const busy = names.slice(0, BUSY);
    const before = Object.fromEntries(await Promise.all(busy.map(async (t) => [t, (await tables.state(t)).version] as const)));
    const advanced = await secondsUntilEach('every busy table merging on v2 alone', busy, Date.now(), 120_000, async (t) => (await tables.state(t)).version > before[t]!);
    console.log(`[upgrade] first commit on v2 alone after (s): ${JSON.stringify(advanced)}`);
  }, 15 * 60_000);

  test('rollback: v1 workers again, v1 made current: every table moves back, v2 drains', async () => {
    await cli(['cluster', 'add-workers', '--workers', '2', '--dir', dir]);
    await until('two v1 workers live again', 90_000, async () => (await liveRecords(state.dataRoot)).filter((r) => r.buildId === v1.buildId).length === 2);
    // A ramp first: half of the tables' next runs would go back; then all of them.
    expect(await cli(['upgrade', 'ramp', v1.buildId, '--percent', '50'])).toContain(`${v1.buildId} is ramping at 50%`);
    expect((await upgradeStatus()).ramping).toEqual({ buildId: v1.buildId, percent: 50 });
    await moveAll('rollback', v1);
    const s = await upgradeStatus();
    expect(s.current).toBe(v1.buildId);
    expect(s.ramping).toBeNull();
    expect(s.versions.find((v) => v.buildId === v2.buildId)).toMatchObject({ tableRuns: 0, drained: true });
    expect(await cli(['cluster', 'stop-workers', '--build', v2.buildId, '--dir', dir])).toContain('stopped worker2, worker3');
  }, 15 * 60_000);

  test('every table exact; no nondeterminism; every run replays on its own version, and the v2 runs not on v1', async () => {
    for (const l of loads.values()) await l.stop();
    for (const [t, l] of loads) await expectMergedExactly({ client, dataRoot: state.dataRoot }, t, l, ['s0', 's1']);
    const failures: string[] = [];
    const runs: NamedRun[] = [];
    for (const t of names) {
      for (const [i, h] of (await chainHistories(client, workflowIdForTable(t))).entries()) {
        const id = `${t}#${i + 1}`;
        runs.push({ id, history: h });
        for (const e of h.events ?? []) {
          const cause = e.workflowTaskFailedEventAttributes?.cause;
          if (cause != null && String(cause).includes('NON_DETERMINISTIC') ) failures.push(`${id}: nondeterminism at event ${String(e.eventId)}`);
          if (e.workflowTaskFailedEventAttributes && (e.workflowTaskFailedEventAttributes.failure?.message ?? '').includes('TMPRL1100')) failures.push(`${id}: TMPRL1100 at event ${String(e.eventId)}`);
        }
      }
    }
    const { failures: replayFailures, seen, crossChecked: v2RunsWithCommits } = await replayByRelease(runs, v2, v1);
    failures.push(...replayFailures);
    console.log(`[upgrade] runs per version: ${JSON.stringify(seen)}; v2 runs with commits: ${v2RunsWithCommits}`);
    expect(failures).toEqual([]);
    expect(seen[v1.buildId]).toBeGreaterThan(names.length);
    expect(seen[v2.buildId]).toBeGreaterThanOrEqual(names.length);
    expect(v2RunsWithCommits).toBeGreaterThan(0);
  }, 15 * 60_000);
});
