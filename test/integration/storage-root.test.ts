import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import { shardNames } from '../../src/messages/names';
import { createTableMeta } from '../../src/storage/table-meta';
import { canonicalLocalPath } from '../../src/storage/reached-root';
import { TEMP_MARKER } from '../../src/storage/layout';
import { TableWriter } from '../../src/client/table-writer';
import { createOutsideTable } from '../support/outside-table';
import { startHarness, uniqueName, type Harness } from '../support/harness';

// One storage root per deployment: a client (the installed `turnstile` command, and the
// writer library under it) whose TURNSTILE_DATA is not the root the table's workers use
// is refused with one line naming both, exit 2, before it writes anything; on the
// workers' root, however spelled, it works. Workers on a local root and on the run's
// S3, and a `turnstile dev --storage s3` whose printed exports a second terminal uses.

const BIN = path.join(PROJECT_ROOT, (JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { bin: { turnstile: string } }).bin.turnstile);
const AWS_VARS = ['AWS_ENDPOINT_URL', 'AWS_ENDPOINT_URL_S3', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_REGION'];

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** The CLI with exactly `env` on top of this process's environment minus the storage variables. */
function turnstile(env: Record<string, string>, args: string[], cwd = PROJECT_ROOT): Promise<Run> {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const k of ['TURNSTILE_DATA', 'TEMPORAL_ADDRESS', 'TURNSTILE_TASK_QUEUE', ...AWS_VARS]) delete base[k];
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { ...base, ...env }, cwd, timeout: 90_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr: err?.killed ? `${stderr}[killed by the test after 90 s: turnstile ${args.join(' ')}]` : stderr }),
    );
  });
}

/** Exit 2 and exactly this one line on stderr. */
function expectRefusedWith(r: Run, line: string): void {
  expect(r.code, r.stderr).toBe(2);
  expect(r.stderr).toBe(`turnstile: ${line}\n`);
}

const refusal = (client: string, taskQueue: string, workers: string): string => `TURNSTILE_DATA: ${client} is not the storage root of the workers on task queue ${taskQueue}; accepted: ${workers}, the root they use`;

/**
 * Every file under `dir`, relative (nothing when it does not exist), without temporary
 * names: those of this process's own createTableMeta come and go in the background.
 */
const filesUnder = (dir: string): string[] =>
  fs.existsSync(dir)
    ? (fs.readdirSync(dir, { recursive: true, withFileTypes: true }) as fs.Dirent[])
        .filter((e) => e.isFile() && !e.name.includes(TEMP_MARKER))
        .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
        .sort()
    : [];

const scratch: string[] = [];
const tempDir = (name: string): string => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), `turnstile-${name}-`));
  scratch.push(d);
  return d;
};
afterAll(() => {
  for (const d of scratch) fs.rmSync(d, { recursive: true, force: true });
});

describe('workers on a local root', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ name: 'rootfs' });
  });
  afterAll(async () => h?.close());

  const env = (dataRoot: string) => ({ TEMPORAL_ADDRESS: h.address, TURNSTILE_TASK_QUEUE: h.taskQueue, TURNSTILE_DATA: dataRoot });

  test('table create, table adopt and write on another root exit 2 with one line naming both roots, writing nothing there', async () => {
    const other = tempDir('other-root');
    const line = refusal(other, h.taskQueue, canonicalLocalPath(h.dataRoot));
    const name = uniqueName('rootcreate');
    expectRefusedWith(await turnstile(env(other), ['table', 'create', name, '--key', 'id', '--shards', '2']), line);
    const uri = path.join(tempDir('outside'), `${name}.lance`);
    await createOutsideTable(uri, 10);
    expectRefusedWith(await turnstile(env(other), ['table', 'adopt', name, '--uri', uri]), line);
    expect(filesUnder(other)).toEqual([]);

    // A table that exists under the other root (made there before, by hand): its seals would never be merged.
    await createTableMeta(other, { name, key: 'id', shards: shardNames(2), indices: [] });
    const before = filesUnder(other);
    expect(before).toEqual([`_turnstile/${name}/table.json`]);
    expectRefusedWith(await turnstile(env(other), ['write', name, '--shard', 's0', '--rows', '10']), line);
    await expect(TableWriter.open(h.tables, other, name)).rejects.toMatchObject({ name: 'StorageRootMismatchError', message: line });
    expect(filesUnder(other)).toEqual(before);
    // Nor did any of it reach the workers' root or start a workflow.
    expect(fs.existsSync(path.join(h.dataRoot, '_turnstile', name))).toBe(false);
    expect((await turnstile(env(h.dataRoot), ['status', name])).code).toBe(2);
  });

  test('the workers\' root, spelled otherwise, works', async () => {
    const name = uniqueName('rootsame');
    const spelled = `${path.dirname(h.dataRoot)}/./x/../${path.basename(h.dataRoot)}/`;
    const run = (...args: string[]) => turnstile(env(spelled), args);
    const created = await run('table', 'create', name, '--key', 'id');
    expect(created.code, created.stderr).toBe(0);
    const written = await run('write', name, '--shard', 's0', '--rows', '20');
    expect({ code: written.code, stderr: written.stderr }).toEqual({ code: 0, stderr: '' });
    const merged = await run('wait-merged', name, '--shard', 's0', '--seq', '1', '--timeout', '60');
    expect(merged.stdout, merged.stderr).toMatch(/merged .* seq 1/);
    const writer = await TableWriter.open(h.tables, spelled, name);
    await writer.close();
  });
});

describe('workers on S3', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ name: 'roots3', storage: 's3' });
  });
  afterAll(async () => h?.close());

  test('a client on a local root is refused naming the bucket and endpoint; with the workers\' S3 settings it works', async () => {
    const endpoint = process.env.AWS_ENDPOINT_URL!;
    const s3Env = Object.fromEntries(AWS_VARS.flatMap((k) => (process.env[k] ? [[k, process.env[k]]] : [])));
    const local = path.join(tempDir('local-root'), '.turnstile', 'data');
    const name = uniqueName('roots3');
    const refused = await turnstile({ TEMPORAL_ADDRESS: h.address, TURNSTILE_TASK_QUEUE: h.taskQueue, TURNSTILE_DATA: local }, ['table', 'create', name, '--key', 'id']);
    expectRefusedWith(refused, refusal(local, h.taskQueue, `${h.dataRoot} (AWS_ENDPOINT_URL=${endpoint})`));
    expect(fs.existsSync(local)).toBe(false);

    const run = (...args: string[]) => turnstile({ TEMPORAL_ADDRESS: h.address, TURNSTILE_TASK_QUEUE: h.taskQueue, TURNSTILE_DATA: h.dataRoot, ...s3Env }, args);
    const created = await run('table', 'create', name, '--key', 'id');
    expect(created.code, created.stderr).toBe(0);
    const written = await run('write', name, '--shard', 's0', '--rows', '20');
    expect({ code: written.code, stderr: written.stderr }).toEqual({ code: 0, stderr: '' });
  });
});

describe('turnstile dev --storage s3', () => {
  const children: ChildProcess[] = [];
  afterAll(() => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  });

  test('prints the exports a second terminal needs: without them it is refused, with them it writes and merges', async () => {
    const dir = tempDir('dev-s3');
    const suffix = `${process.pid}-${Date.now()}`;
    const devEnv: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress'), TURNSTILE_TASK_QUEUE: `devs3-${suffix}`, TURNSTILE_DEPLOYMENT: `devs3-${suffix}`, TURNSTILE_METRICS_ADDRESS: 'off' };
    for (const k of ['TURNSTILE_DATA', ...AWS_VARS]) delete devEnv[k];
    const child = spawn(process.execPath, [BIN, 'dev', '--data', dir, '--storage', 's3'], { env: devEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    try {
      await expect.poll(() => out, { timeout: 120_000, interval: 200 }).toMatch(/Running; Ctrl-C/);
      const exports = Object.fromEntries([...out.matchAll(/^ {2}export (\w+)=(\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
      expect(Object.keys(exports)).toEqual(['TEMPORAL_ADDRESS', 'TURNSTILE_TASK_QUEUE', 'TURNSTILE_DATA', 'AWS_ENDPOINT_URL', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_REGION']);
      expect(exports.TURNSTILE_DATA).toBe('s3://turnstile/data');

      // A second terminal in another directory that exported only the server: its default root is local.
      const name = uniqueName('rootdev');
      const cwd = tempDir('second-terminal');
      const serverOnly = { TEMPORAL_ADDRESS: exports.TEMPORAL_ADDRESS!, TURNSTILE_TASK_QUEUE: exports.TURNSTILE_TASK_QUEUE! };
      const local = path.join(fs.realpathSync(cwd), '.turnstile', 'data');
      expectRefusedWith(await turnstile(serverOnly, ['table', 'create', name, '--key', 'id'], cwd), refusal(local, exports.TURNSTILE_TASK_QUEUE!, `s3://turnstile/data (AWS_ENDPOINT_URL=${exports.AWS_ENDPOINT_URL})`));
      expect(fs.existsSync(path.join(cwd, '.turnstile'))).toBe(false);

      const run = (...args: string[]) => turnstile(exports, args, cwd);
      const created = await run('table', 'create', name, '--key', 'id');
      expect(created.code, created.stderr).toBe(0);
      const written = await run('write', name, '--shard', 's0', '--rows', '20');
      expect(written.code, written.stderr).toBe(0);
      const merged = await run('wait-merged', name, '--shard', 's0', '--seq', '1', '--timeout', '60');
      expect(merged.stdout, merged.stderr).toMatch(new RegExp(`merged ${name}/s0 seq 1`));
    } finally {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGINT');
      await exited;
    }
  }, 240_000);
});
