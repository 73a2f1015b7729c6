import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, test } from 'vitest';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import { NO_BINARY, temporalBinary as binary } from '../support/own-server';

// A process that started a dev server and is then killed outright (no exit handlers
// run) must not leave the server behind holding its port and database, nor the UI
// server (a process of its own) holding its port.

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test('the dev server and its UI server go when the process that started them is SIGKILLed', async (ctx) => {
  if (!binary) return ctx.skip(NO_BINARY);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-orphan-'));
  const tsx = path.join(PROJECT_ROOT, 'node_modules', '.bin', 'tsx');
  const child = spawn(tsx, [path.join(PROJECT_ROOT, 'test', 'support', 'fixtures', 'start-dev-server.ts'), binary, path.join(dir, 't.db')], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  await expect.poll(() => out, { timeout: 60_000 }).toMatch(/"server":\d+/);
  const { parent, server, ui } = JSON.parse(out.trim().split('\n')[0]!) as { parent: number; server: number; ui: number };
  expect(alive(server)).toBe(true);
  expect(alive(ui)).toBe(true);
  process.kill(parent, 'SIGKILL');
  // The watchdog sends SIGTERM and, 10 s later, SIGKILL to whatever is left.
  await expect.poll(() => alive(server), { timeout: 20_000, interval: 250 }).toBe(false);
  await expect.poll(() => alive(ui), { timeout: 20_000, interval: 250 }).toBe(false);
  child.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
});
