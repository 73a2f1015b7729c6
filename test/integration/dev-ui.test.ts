import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, test } from 'vitest';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import { NO_BINARY, temporalBinary as binary } from '../support/own-server';
import { freePort } from '../../src/server/ports';
import { eventually } from '../support/harness';

// `turnstile dev --demo` as a newcomer runs it (what `npm start` hands over to), on its
// own ports: the Temporal UI it prints answers, and the UI's own HTTP API lists and
// filters the demo table's workflow by the project's search attributes, which is what
// an operator does in the UI. Ctrl-C stops everything.

interface UiExecution {
  execution: { workflowId: string };
  status: string;
  searchAttributes?: { indexedFields?: Record<string, { data?: string }> };
}

const decode = (p: { data?: string } | undefined): unknown => (p?.data ? JSON.parse(Buffer.from(p.data, 'base64').toString('utf8')) : undefined);

test('turnstile dev --demo: the UI answers and lists the table filtered by its search attributes; Ctrl-C stops it all', async (ctx) => {
  if (!binary) return ctx.skip(NO_BINARY);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-devui-'));
  const [port, uiPort] = [await freePort(), await freePort()];
  const env: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_SERVER_PATH: binary };
  for (const k of ['TEMPORAL_ADDRESS', 'TURNSTILE_DATA', 'TURNSTILE_TASK_QUEUE']) delete env[k];
  const child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'scripts', 'turnstile.mjs'), 'dev', '--data', dir, '--port', String(port), '--ui-port', String(uiPort), '--demo'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  try {
    await eventually(async () => /demo: table demo has \d+ rows/.test(out), 'the demo to finish', 120_000);
    const ui = `http://127.0.0.1:${uiPort}`;
    expect(out).toContain(`Temporal UI:   ${ui}`);
    expect((await fetch(ui)).status).toBe(200);

    const list = async (query: string): Promise<UiExecution[]> => {
      const r = await fetch(`${ui}/api/v1/namespaces/default/workflows?query=${encodeURIComponent(query)}`);
      expect(r.status).toBe(200);
      return ((await r.json()) as { executions?: UiExecution[] }).executions ?? [];
    };
    // Search attributes reach visibility asynchronously (numbers at most once a second).
    const found = await eventually(async () => {
      const ex = await list(`TurnstileTable = "demo" AND TurnstileBacklog = 0 AND TurnstilePaused = false`);
      return ex.length === 1 ? ex[0] : null;
    }, 'the demo table filtered by backlog in the UI API', 30_000, 500);
    expect(found.execution.workflowId).toBe('table/demo');
    const attrs = found.searchAttributes?.indexedFields ?? {};
    expect(decode(attrs.TurnstileTable)).toBe('demo');
    expect(decode(attrs.TurnstileBacklog)).toBe(0);
    expect(decode(attrs.TurnstileWritePressure)).toBe(0);
    // A filter that does not match finds nothing: the query is really applied.
    expect(await list(`TurnstileTable = "demo" AND TurnstileBacklog > 0`)).toEqual([]);
  } finally {
    try {
      process.kill(-child.pid!, 'SIGINT');
    } catch {
      // already gone
    }
  }
  expect(await exited).toBe(0);
  expect(out).toContain('stopped.');
  // The server went with it: its UI port no longer answers.
  await expect(fetch(`http://127.0.0.1:${uiPort}`)).rejects.toThrow();
  fs.rmSync(dir, { recursive: true, force: true });
}, 180_000);
