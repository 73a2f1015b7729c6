import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { PROJECT_ROOT } from '../../src/util/project-paths';

// An operator's command loads what it uses and not the worker: @temporalio/worker and the
// SDK core's native library cost a command ~0.4 s of CPU to load (`table adopt` took 1.15
// s of CPU against 0.71 s without them). Each command runs the installed `turnstile` with
// a bad table name, so it loads its module and then refuses, with no server needed.

const BIN = path.join(PROJECT_ROOT, 'scripts', 'turnstile.mjs');
const WORKER_PACKAGES = ['@temporalio/worker', '@temporalio/core-bridge'];

let dir: string;
let preload: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-footprint-'));
  preload = path.join(dir, 'packages-loaded.cjs');
  // Prints the packages the process loaded, as its last line on stderr.
  fs.writeFileSync(
    preload,
    `process.on('exit', () => { const p = new Set(Object.keys(require.cache).map((f) => (f.match(/node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//) || [])[1]).filter(Boolean)); process.stderr.write('PACKAGES ' + JSON.stringify([...p]) + '\\n'); });\n`,
  );
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function run(args: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      ['-r', preload, BIN, ...args],
      { env: { ...process.env, TEMPORAL_ADDRESS: '127.0.0.1:1', TURNSTILE_DATA: dir }, timeout: 60_000 },
      (err, _stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
    ),
  );
}

const COMMANDS = [
  ['table', 'adopt', 'bad!', '--uri', '/tmp/bad.lance'],
  ['table', 'create', 'bad!', '--key', 'id'],
  ['table', 'reset', 'bad!', '--reason', 'r'],
  ['mode', 'bad!', 'shadow'],
  ['shadow-report', 'bad!'],
  ['status', 'bad!'],
  ['why', 'bad!'],
  ['history', 'bad!'],
  ['pause', 'bad!'],
  ['bump', 'bad!', '--kind', 'merge'],
  ['write', 'bad!', '--shard', 's0', '--rows', '1'],
  ['wait-merged', 'bad!', '--shard', 's0', '--seq', '1'],
];

test.each(COMMANDS.map((c) => [c.join(' '), c] as const))('%s refuses the name in one line without loading the worker', async (_name, args) => {
  const r = await run([...args]);
  const lines = r.stderr.trim().split('\n');
  const packages = JSON.parse(lines.pop()!.replace(/^PACKAGES /, '')) as string[];
  expect(r.code, r.stderr).toBe(2);
  expect(lines, r.stderr).toEqual([expect.stringMatching(/^turnstile: table: "bad!" is not valid; accepted: /)]);
  // The preload itself saw packages load: an empty list would mean it saw nothing.
  expect(packages).toContain('commander');
  expect(packages.filter((p) => WORKER_PACKAGES.includes(p))).toEqual([]);
});
