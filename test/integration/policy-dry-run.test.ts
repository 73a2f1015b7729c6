import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import { TableWriter } from '../../src/client/table-writer';
import { MergeWaiter } from '../../src/client/merge-waiter';
import { generateRows } from '../../src/writer';
import type { DryRunReport } from '../../src/sim/dry-run';
import { startHarness, uniqueName, type Harness } from '../support/harness';

// `turnstile policy NAME --set FILE --dry-run` against a real table: its workflow's
// recorded demand replayed under the current and the proposed policy, and nothing
// changed on the table.

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ name: 'dryrun' });
});
afterAll(async () => h?.close());

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

const turnstile = (...args: string[]): Promise<Run> =>
  new Promise((resolve) =>
    execFile(process.execPath, [path.join(PROJECT_ROOT, 'scripts', 'turnstile.mjs'), ...args], { env: { ...process.env, TEMPORAL_ADDRESS: h.address, TURNSTILE_DATA: h.dataRoot, TURNSTILE_TASK_QUEUE: h.taskQueue }, timeout: 90_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );

function expectRefused(r: Run, pattern: RegExp): void {
  expect(r.code, r.stderr).toBe(2);
  const lines = r.stderr.trim().split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(pattern);
}

const tableJson = (name: string): string => fs.readFileSync(path.join(h.dataRoot, '_turnstile', name, 'table.json'), 'utf8');

test('policy --dry-run replays the recorded window under both policies side by side and changes nothing', async () => {
  const name = uniqueName('dryrun');
  expect((await turnstile('table', 'create', name, '--key', 'id', '--shards', '2')).code).toBe(0);
  const writer = await TableWriter.open(h.tables, h.dataRoot, name);
  const waiter = new MergeWaiter(h.client);
  // Six generations, three per shard, the last two together.
  for (let g = 1; g <= 3; g++) {
    for (const shard of ['s0', 's1']) await writer.write(shard, generateRows({ keys: [g * 100, g * 100 + 199], shard, shards: ['s0', 's1'], seed: g }));
    await writer.flush();
    if (g < 3) for (const shard of ['s0', 's1']) expect((await waiter.wait(name, shard, g)).merged).toBe(true);
  }
  for (const shard of ['s0', 's1']) expect((await waiter.wait(name, shard, 3)).merged).toBe(true);

  const before = await h.tables.state(name);
  const metaBefore = tableJson(name);
  const file = path.join(h.dataRoot, `${name}-proposed.json`);
  fs.writeFileSync(file, JSON.stringify({ maxTurnWaitSecs: { merge: 5 }, classes: { optimize: 2 } }));

  const r = await turnstile('policy', name, '--set', file, '--dry-run', '--hours', '1');
  expect(r.code, r.stderr).toBe(0);
  console.log(`turnstile policy ${name} --set proposed.json --dry-run --hours 1\n${r.stdout}`);
  expect(r.stdout).toMatch(new RegExp(`^policy dry run of ${name}: `));
  expect(r.stdout).toMatch(/^\s+observed\s+current policy\s+proposed policy$/m);
  expect(r.stdout).toMatch(/^turns\s+merge\s+\d+\s+\d+ \(\d+\)\s+\d+ \(\d+\)$/m);
  expect(r.stdout).toMatch(/^max wait s\s+merge\s/m);
  expect(r.stdout).toMatch(/^time to drain\s+-\s+\S+/m);
  expect(r.stdout).toContain('proposed: maxTurnWaitSecs.merge 60 -> 5, classes.optimize 3 -> 2');
  for (const line of r.stdout.split('\n')) expect(line.length, line).toBeLessThanOrEqual(100);

  const j = await turnstile('policy', name, '--set', file, '--dry-run', '--hours', '1', '--json');
  expect(j.code, j.stderr).toBe(0);
  const report = JSON.parse(j.stdout) as DryRunReport;
  expect(report.table).toBe(name);
  expect(report.recorded.seals).toBe(6);
  expect(report.observed.turns.merge).toBeGreaterThanOrEqual(1);
  expect(report.current.policy).toEqual(before.policy);
  expect(report.proposed.policy.maxTurnWaitSecs.merge).toBe(5);
  expect(report.current.runs).toHaveLength(5);
  expect(report.proposed.runs).toHaveLength(5);
  // The six seals replayed are merged in every run.
  for (const run of [...report.current.runs, ...report.proposed.runs]) expect(run.drainSecs).not.toBeNull();

  // Nothing changed: the live policy and table.json are as they were.
  const after = await h.tables.state(name);
  expect(after.policy).toEqual(before.policy);
  expect(tableJson(name)).toBe(metaBefore);

  // A file the real command refuses is refused the same way, before any replay.
  const bad = path.join(h.dataRoot, `${name}-bad.json`);
  fs.writeFileSync(bad, JSON.stringify({ maxTurnWaitSecs: { optimize: 0 }, bogus: 1 }));
  const real = await turnstile('policy', name, '--set', bad);
  expectRefused(real, /^turnstile: policy: maxTurnWaitSecs.optimize: must be an integer in \[1, 86400\]; bogus: unknown key$/);
  const dry = await turnstile('policy', name, '--set', bad, '--dry-run');
  expectRefused(dry, /^turnstile: policy: /);
  expect(dry.stderr).toBe(real.stderr);
  for (const hours of ['0', '0.05', '169', 'abc', '-1']) {
    expectRefused(await turnstile('policy', name, '--set', file, '--dry-run', '--hours', hours), /^turnstile: --hours: ".*" is not a number of hours in \[0\.1, 168\]$/);
  }
  expectRefused(await turnstile('policy', name, '--set', file, '--hours', '2'), /^turnstile: --hours: only with --dry-run$/);
}, 150_000);

test('a table with no recorded demand: one line, exit 0', async () => {
  const name = uniqueName('dryidle');
  expect((await turnstile('table', 'create', name, '--key', 'id', '--shards', '2')).code).toBe(0);
  const file = path.join(h.dataRoot, `${name}-proposed.json`);
  fs.writeFileSync(file, JSON.stringify({ softBacklog: 50 }));
  const r = await turnstile('policy', name, '--set', file, '--dry-run', '--hours', '2');
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout.trim()).toBe('no recorded demand in the last 2 hours');
  const j = await turnstile('policy', name, '--set', file, '--dry-run', '--json');
  expect(JSON.parse(j.stdout)).toEqual({ table: name, hours: 24, empty: true, message: 'no recorded demand in the last 24 hours' });
}, 90_000);
