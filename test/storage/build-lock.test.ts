import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, test } from 'vitest';
import { PROJECT_ROOT } from '../../src/util/project-paths';

// The Temporal CLI build lock of scripts/ensure-temporal.mjs: waiters that all find the
// same dead holder must still enter one at a time (none may remove the lock another
// has just taken).

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
