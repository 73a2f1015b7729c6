import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, test } from 'vitest';
import { isStale, LockTimeoutError, withFileLock } from '../../src/storage/lock-file.mjs';
import { sleep } from '../../src/util/sleep';
import { PROJECT_ROOT } from '../../src/util/project-paths';

// The lock file of src/storage/lock-file.mjs, waited for asynchronously (fs-storage's
// compare-and-set) and synchronously (the build lock of scripts/ensure-temporal.mjs):
// waiters that all find the same dead holder must still enter one at a time (none may
// remove the lock another has just taken).

const holderScript = `
import fs from 'node:fs';
import { withBuildLock } from ${JSON.stringify(path.join(PROJECT_ROOT, 'scripts', 'ensure-temporal.mjs'))};
const [dir, log] = process.argv.slice(1);
withBuildLock(dir, () => {
  fs.appendFileSync(log, 'in ' + process.pid + '\\n');
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);
  fs.appendFileSync(log, 'out ' + process.pid + '\\n');
});
`;

test('waiters that find a dead holder take the build lock one at a time', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-buildlock-'));
  const log = path.join(dir, 'log');
  try {
    // A lock left by a process that is gone: a pid far above any pid_max.
    fs.writeFileSync(path.join(dir, '.build.lock'), '99999999');
    const runs = Array.from({ length: 4 }, () => {
      const child = spawn(process.execPath, ['--input-type=module', '-e', holderScript, dir, log], { stdio: ['ignore', 'inherit', 'inherit'] });
      return new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    });
    expect(await Promise.all(runs)).toEqual([0, 0, 0, 0]);
    const lines = fs.readFileSync(log, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(8);
    // Strictly alternating: every "in" is followed by the same process's "out".
    for (let i = 0; i < lines.length; i += 2) expect(lines[i + 1]).toBe(lines[i]!.replace('in', 'out'));
    expect(fs.existsSync(path.join(dir, '.build.lock'))).toBe(false);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a holder is stale when its pid is gone, or when it cannot be read and is old, or is on another host and is old', () => {
  const here = (pid: number) => JSON.stringify({ pid, host: os.hostname(), token: 't', at: 0 });
  expect(isStale(here(process.pid), 0)).toBe(false);
  expect(isStale(here(99999999), 0)).toBe(true);
  expect(isStale(String(process.pid), 0)).toBe(false);
  expect(isStale('99999999', 0)).toBe(true);
  expect(isStale('', 1_000)).toBe(false);
  expect(isStale('', 60_000)).toBe(true);
  expect(isStale('0', 60_000)).toBe(true);
  const there = JSON.stringify({ pid: process.pid, host: 'another-host', token: 't', at: 0 });
  expect(isStale(there, 60_000)).toBe(false);
  expect(isStale(there, 11 * 60_000)).toBe(true);
});

test('async holders of one lock never overlap, and a dead holder is taken over', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-lockfile-'));
  const lock = path.join(dir, 'x.lock');
  try {
    fs.writeFileSync(lock, JSON.stringify({ pid: 99999999, host: os.hostname(), token: 'dead', at: 0 }));
    let inside = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 8 }, () =>
        withFileLock(lock, async () => {
          most = Math.max(most, ++inside);
          await sleep(5);
          inside--;
        }),
      ),
    );
    expect(most).toBe(1);
    expect(fs.existsSync(lock)).toBe(false);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a live holder is waited for until the timeout', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-lockfile-'));
  const lock = path.join(dir, 'x.lock');
  try {
    fs.writeFileSync(lock, JSON.stringify({ pid: process.pid, host: os.hostname(), token: 'other', at: 0 }));
    await expect(withFileLock(lock, async () => 1, { timeoutMs: 100 })).rejects.toBeInstanceOf(LockTimeoutError);
    expect(fs.existsSync(lock), 'the holder keeps its lock').toBe(true);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
