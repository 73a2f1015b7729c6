import { execFile } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import { EXIT_TIMED_OUT } from '../../src/cli/exit-codes';
import { startHarness, uniqueName, type Harness } from '../support/harness';

// `wait-merged` that reaches its --timeout exits with a code of its own (not bad input's
// 2) and says how far the shard got. A paused table never merges, so the wait surely
// times out.

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ name: 'waittimeout' });
});
afterAll(async () => h?.close());

const turnstile = (...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
  new Promise((resolve) =>
    execFile(process.execPath, [path.join(PROJECT_ROOT, 'scripts', 'turnstile.mjs'), ...args], { env: { ...process.env, TEMPORAL_ADDRESS: h.address, TURNSTILE_DATA: h.dataRoot, TURNSTILE_TASK_QUEUE: h.taskQueue }, timeout: 90_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );

test('wait-merged on a paused table times out with its own exit code and says how far the shard got', async () => {
  const name = uniqueName('paused');
  for (const args of [['table', 'create', name, '--key', 'id'], ['write', name, '--shard', 's0', '--rows', '20'], ['wait-merged', name, '--shard', 's0', '--seq', '1', '--timeout', '60'], ['pause', name], ['write', name, '--shard', 's0', '--rows', '20']]) {
    const r = await turnstile(...args);
    expect({ code: r.code, stderr: r.stderr }, args.join(' ')).toEqual({ code: 0, stderr: '' });
  }
  const r = await turnstile('wait-merged', name, '--shard', 's0', '--seq', '2', '--timeout', '2');
  expect({ code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({
    code: EXIT_TIMED_OUT,
    stdout: '',
    stderr: `turnstile: wait-merged: timed out after 2 s: ${name}/s0 merged through seq 1, waiting for 2 (table paused)\n`,
  });
  expect(EXIT_TIMED_OUT).not.toBe(2);
});
