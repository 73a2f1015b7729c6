import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { afterAll, expect, inject, test } from 'vitest';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import { workflowIdForTable } from '../../src/messages/names';
import { keptBundles } from '../../src/worker/kept-bundles';
import { chainHistories } from '../support/history';
import { nextRelease, pinnedBuildId, replayByRelease, thisRelease, type NamedRun, type Release } from '../support/releases';
import { sleep } from '../../src/util/sleep';

// `npm start`, stopped, a `git pull` of a release whose table workflow changed, and
// `npm start` again: the second start runs the new release beside the kept bundle of the
// old one until every table has moved on, then stops the old one. The releases here:
// this checkout's bundle first, then a next release (one more activity before each
// commit, which the first cannot replay) given to dev as its bundle file.

const execFileP = promisify(execFile);
const TURNSTILE = path.join(PROJECT_ROOT, 'scripts', 'turnstile.mjs');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-dev-upgrade-'));
const suffix = `${process.pid}-${Date.now()}`;
const env: Record<string, string> = {
  TEMPORAL_ADDRESS: inject('temporalAddress'),
  TURNSTILE_DEPLOYMENT: `devup-${suffix}`,
  TURNSTILE_TASK_QUEUE: `devup-${suffix}`,
  TURNSTILE_DATA: path.join(dir, 'data'),
  TURNSTILE_METRICS_ADDRESS: 'off',
};
const children: ChildProcess[] = [];

afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
});

/** `turnstile dev` with `extra` env; resolves with its output so far once `ready` shows in it. */
function startDev(extra: Record<string, string>, ready: RegExp): Promise<{ child: ChildProcess; out: () => string }> {
  const child = spawn(process.execPath, [TURNSTILE, 'dev', '--data', dir], { env: { ...process.env, ...env, ...extra }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`dev did not print ${ready} within 90 s:\n${out}`)), 90_000);
    const onData = (b: Buffer) => {
      out += b.toString();
      if (ready.test(out)) {
        clearTimeout(timer);
        resolve({ child, out: () => out });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`dev exited (${code}):\n${out}`)));
  });
}

async function stopDev(child: ChildProcess): Promise<void> {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGINT');
  await exited;
}

const cli = async (...args: string[]) => (await execFileP(process.execPath, [TURNSTILE, ...args], { env: { ...process.env, ...env } })).stdout;

async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean> | boolean, log?: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s${log ? `\n${log()}` : ''}`);
    await sleep(300);
  }
}

test('after a release with a changed table workflow, dev keeps the old one until every table moved on', async () => {
  const v1: Release = thisRelease();
  const v2: Release = await nextRelease(dir);
  const client = new Client({ connection: await Connection.connect({ address: env.TEMPORAL_ADDRESS! }) });
  try {
    // The first release: two tables, each merged once.
    const first = await startDev({}, /Running; Ctrl-C/);
    expect(first.out()).toContain(`Version:       ${v1.buildId} of deployment ${env.TURNSTILE_DEPLOYMENT}`);
    for (const t of ['up0', 'up1']) {
      await cli('table', 'create', t, '--key', 'id', '--shards', '1');
      await cli('write', t, '--shard', 's0', '--rows', '100');
      await cli('wait-merged', t, '--shard', 's0', '--seq', '1', '--timeout', '60');
      expect(await pinnedBuildId(client, workflowIdForTable(t))).toBe(v1.buildId);
    }
    await stopDev(first.child);
    // Sealed while no dev runs: the next start must merge it.
    await cli('write', 'up0', '--shard', 's0', '--rows', '100');

    // The pulled release.
    const second = await startDev({ TURNSTILE_WORKFLOW_BUNDLE: v2.file }, /Running; Ctrl-C/);
    expect(second.out()).toContain(`previous release ${v1.buildId}: 2 table run(s) pinned to it`);
    await waitFor('both tables on the new release', 60_000, async () => (await Promise.all(['up0', 'up1'].map((t) => pinnedBuildId(client, workflowIdForTable(t))))).every((b) => b === v2.buildId));
    await waitFor('the old release retired', 60_000, () => second.out().includes(`previous release ${v1.buildId}: no table run left on it; its worker stopped`), second.out);
    expect(keptBundles(dir).map((k) => k.buildId)).toEqual([v2.buildId]);
    await cli('wait-merged', 'up0', '--shard', 's0', '--seq', '2', '--timeout', '60');
    await cli('write', 'up1', '--shard', 's0', '--rows', '100');
    await cli('wait-merged', 'up1', '--shard', 's0', '--seq', '2', '--timeout', '60');
    const status = JSON.parse(await cli('upgrade', 'status', '--json')) as { current: string; versions: { buildId: string; tableRuns: number; drained: boolean }[] };
    expect(status.current).toBe(v2.buildId);
    expect(status.versions.find((v) => v.buildId === v1.buildId)).toMatchObject({ tableRuns: 0, drained: true });
    await stopDev(second.child);

    // Every run replays on the release that ran it, and the new release's runs that
    // committed fail on the old one's code: the change was one a patch gate would have needed.
    const runs: NamedRun[] = [];
    for (const t of ['up0', 'up1']) for (const [i, history] of (await chainHistories(client, workflowIdForTable(t))).entries()) runs.push({ id: `${t}#${i + 1}`, history });
    const { failures, crossChecked } = await replayByRelease(runs, v2, v1);
    expect(failures).toEqual([]);
    expect(crossChecked).toBeGreaterThan(0);
  } finally {
    await client.connection.close();
  }
}, 300_000);
