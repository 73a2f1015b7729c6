import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { PROJECT_ROOT } from '../../src/paths';
import { writeIpcFileAtomic } from '../../src/storage/arrow';
import { tableFromRows } from '../../src/storage/records';
import { generateRows } from '../../src/writer';
import { startHarness, uniqueName, type Harness } from '../support/harness';

// The command line of the README, as operators run it, against the real server: the
// harness's worker serves the task queue the CLI is pointed at.

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ name: 'cli' });
});
afterAll(async () => h?.close());

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI against the harness's server, data root and task queue (or `env`'s). */
function turnstileWith(env: Record<string, string>, ...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(PROJECT_ROOT, 'scripts', 'turnstile.mjs'), ...args],
      { env: { ...process.env, TEMPORAL_ADDRESS: h.address, TURNSTILE_DATA: h.dataRoot, TURNSTILE_TASK_QUEUE: h.taskQueue, ...env }, timeout: 90_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const turnstile = (...args: string[]): Promise<Run> => turnstileWith({}, ...args);

/** A refusal: non-zero exit and exactly one line on stderr. */
function expectRefused(r: Run, pattern: RegExp): void {
  expect(r.code, r.stderr).not.toBe(0);
  const lines = r.stderr.trim().split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(pattern);
}

test('create, write, wait-merged, status --json, pause/resume and list through the CLI', async () => {
  const name = uniqueName('cli');
  const policyFile = path.join(h.dataRoot, `${name}-policy.json`);
  fs.writeFileSync(policyFile, JSON.stringify({ maxTurnWaitSecs: { optimize: 7 } }));
  expect((await turnstile('table', 'create', name, '--key', 'id', '--shards', '2', '--policy', policyFile)).code).toBe(0);
  const w = await turnstile('write', name, '--shard', 's0', '--rows', '50', '--keys', '0..400');
  expect(w.stdout).toMatch(new RegExp(`^sealed ${name}/s0 seq 1 \\(50 rows\\)`));
  const m = await turnstile('wait-merged', name, '--shard', 's0', '--seq', '1', '--timeout', '60');
  expect(m.code, m.stderr).toBe(0);
  expect(m.stdout).toMatch(/in table version \d+/);

  // --file: an Arrow IPC file of rows that route to s1 is sealed as one generation.
  const file = path.join(h.dataRoot, `${name}-rows.arrow`);
  await writeIpcFileAtomic(file, tableFromRows(generateRows({ keys: [0, 400], count: 30, shard: 's1', shards: ['s0', 's1'], seed: 3 }), 'id'));
  expect((await turnstile('write', name, '--shard', 's1', '--file', file)).stdout).toMatch(new RegExp(`^sealed ${name}/s1 seq 1 \\(30 rows\\)`));
  expect((await turnstile('wait-merged', name, '--shard', 's1', '--seq', '1', '--timeout', '60')).code).toBe(0);
  // The same file into the other shard is refused: a key belongs to one shard.
  expectRefused(await turnstile('write', name, '--shard', 's0', '--file', file), /^turnstile: key \d+ belongs to shard s1, not s0 /);

  const s = JSON.parse((await turnstile('status', name, '--json')).stdout);
  for (const key of ['table', 'version', 'paused', 'pausedKinds', 'writePressure', 'backlog', 'shards', 'turn', 'preparing', 'queue', 'counters']) expect(s).toHaveProperty(key);
  expect(s.shards).toEqual([
    expect.objectContaining({ shard: 's0', sealedThroughSeq: 1, mergedThroughSeq: 1 }),
    expect.objectContaining({ shard: 's1', sealedThroughSeq: 1, mergedThroughSeq: 1 }),
  ]);
  for (const key of ['turns', 'stalls', 'retries', 'maxTurnWaitSecs']) expect(s.counters).toHaveProperty(key);
  expect(s.counters.turns.merge).toBe(2);
  expect(s.policy.maxTurnWaitSecs).toEqual({ merge: 60, optimize: 7, index: 300, gc: 600 });

  expect((await turnstile('pause', name, '--kind', 'merge')).stdout).toMatch(/paused kind merge/);
  await expect.poll(async () => JSON.parse((await turnstile('status', name, '--json')).stdout).pausedKinds, { timeout: 20_000 }).toEqual(['merge']);
  expect((await turnstile('resume', name, '--kind', 'merge')).code).toBe(0);
  expect((await turnstile('bump', name, '--kind', 'optimize', '--reason', 'cli test', '--for', '30')).stdout).toMatch(/bumped optimize/);

  const list = JSON.parse((await turnstile('table', 'list', '--json')).stdout) as { table: string; workflow: string }[];
  expect(list.find((t) => t.table === name)).toMatchObject({ workflow: 'running' });
  expect((await turnstile('status', name)).stdout).toMatch(new RegExp(`^table ${name} `));

  // policy --set changes the live policy and is kept in table.json on top of the
  // create-time override, so a workflow started afresh after a terminate has it too.
  const setFile = path.join(h.dataRoot, `${name}-set.json`);
  fs.writeFileSync(setFile, JSON.stringify({ maxTurnWaitSecs: { merge: 45 }, softBacklog: 3 }));
  const set = await turnstile('policy', name, '--set', setFile);
  expect(set.code, set.stderr).toBe(0);
  expect(JSON.parse(set.stdout)).toMatchObject({ softBacklog: 3, maxTurnWaitSecs: { merge: 45, optimize: 7 } });
  const meta = JSON.parse(fs.readFileSync(path.join(h.dataRoot, '_turnstile', name, 'table.json'), 'utf8'));
  expect(meta.policy).toEqual({ maxTurnWaitSecs: { optimize: 7, merge: 45 }, softBacklog: 3 });
  await h.client.workflow.getHandle(`table/${name}`).terminate('cli test: start afresh');
  expect((await turnstile('write', name, '--shard', 's0', '--rows', '10', '--keys', '0..400')).code).toBe(0);
  const fresh = JSON.parse((await turnstile('status', name, '--json')).stdout);
  expect(fresh.policy.maxTurnWaitSecs).toEqual({ merge: 45, optimize: 7, index: 300, gc: 600 });
  expect(fresh.policy.softBacklog).toBe(3);
});

test('bad input exits non-zero with one line naming the field and the accepted range', async () => {
  const name = uniqueName('clibad');
  expect((await turnstile('table', 'create', name, '--key', 'id')).code).toBe(0);
  expectRefused(await turnstile('bump', name, '--kind', 'compact', '--reason', 'x'), /--kind: "compact" is not a kind; accepted: merge, optimize, index, gc/);
  expectRefused(await turnstile('bump', name, '--kind', 'merge', '--class', '7', '--reason', 'x'), /--class: "7" is not an integer in \[1, 4\]/);
  expectRefused(await turnstile('wait-merged', name, '--shard', 's0', '--seq', '-1'), /--seq: "-1" is not an integer in \[0, /);
  expectRefused(await turnstile('write', name, '--shard', 's9', '--rows', '5'), /--shard: "s9" is not a shard of/);
  expectRefused(await turnstile('status', uniqueName('nosuch')), /no such table workflow; create the table with "turnstile table create"/);
  expectRefused(await turnstile('status', 'Bad/Name'), /^turnstile: table: "Bad\/Name" is not valid; accepted: /);
  expectRefused(await turnstile('table', 'create', name, '--key', 'id'), /already exists/);
  const badCreate = path.join(h.dataRoot, 'bad-create-policy.json');
  fs.writeFileSync(badCreate, JSON.stringify({ softBacklog: 'lots' }));
  expectRefused(await turnstile('table', 'create', uniqueName('clibad'), '--key', 'id', '--policy', badCreate), /^turnstile: --policy: softBacklog: must be an integer in \[0, 1000000\]$/);
  const bad = path.join(h.dataRoot, 'bad-policy.json');
  fs.writeFileSync(bad, JSON.stringify({ bogus: 1, maxTurnWaitSecs: { optimize: 0 } }));
  expectRefused(await turnstile('policy', name, '--set', bad), /^turnstile: policy: maxTurnWaitSecs.optimize: must be an integer in \[1, 86400\]; bogus: unknown key$/);
  // The workflow is unharmed.
  expect(JSON.parse((await turnstile('status', name, '--json')).stdout).table).toBe(name);
});

test('`turnstile worker` serves a task queue on its own and stops cleanly on SIGTERM', async () => {
  const taskQueue = uniqueName('tq-cli-worker');
  const env = { ...process.env, TEMPORAL_ADDRESS: h.address, TURNSTILE_DATA: h.dataRoot, TURNSTILE_TASK_QUEUE: taskQueue };
  const worker = spawn(process.execPath, [path.join(PROJECT_ROOT, 'scripts', 'turnstile.mjs'), 'worker'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  worker.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => worker.on('exit', (code) => r(code)));
  try {
    await expect.poll(() => out, { timeout: 60_000 }).toMatch(new RegExp(`worker on ${h.address} task queue ${taskQueue}`));
    const name = uniqueName('cliw');
    const run = (...args: string[]) => turnstileWith({ TURNSTILE_TASK_QUEUE: taskQueue }, ...args);
    expect((await run('table', 'create', name, '--key', 'id')).code).toBe(0);
    expect((await run('write', name, '--shard', 's0', '--rows', '20')).code).toBe(0);
    const m = await run('wait-merged', name, '--shard', 's0', '--seq', '1', '--timeout', '60');
    expect(m.stdout, m.stderr).toMatch(/merged .* seq 1/);
  } finally {
    worker.kill('SIGTERM');
  }
  expect(await exited).toBe(0);
});
