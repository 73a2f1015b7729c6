import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startDevServer, type DevServer } from '../../src/server/dev-server';

// One real Temporal dev server for the whole test run (free ports, a temporary SQLite
// database), or the server at TEMPORAL_ADDRESS when that is set. Tests isolate
// themselves with unique task queues and workflow ids. Tests that start servers of
// their own get the binary through inject('temporalBinary'): null when TEMPORAL_ADDRESS
// is set without TEMPORAL_CLI_PATH (nothing of ours to start; they skip, saying so).

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    temporalBinary: string | null;
  }
}

let server: DevServer | undefined;
let dir: string | undefined;

async function binaryPath(): Promise<string> {
  if (process.env.TEMPORAL_CLI_PATH) return process.env.TEMPORAL_CLI_PATH;
  // Run directly with `npx vitest`: find or build the CLI the way `npm test` does.
  const { ensureTemporal } = (await import(path.resolve(__dirname, '../../scripts/ensure-temporal.mjs'))) as {
    ensureTemporal(): { binary?: string; address?: string };
  };
  const r = ensureTemporal();
  if (!r.binary) throw new Error('no Temporal binary');
  return r.binary;
}

export async function setup(project: TestProject): Promise<void> {
  if (process.env.TEMPORAL_ADDRESS) {
    project.provide('temporalAddress', process.env.TEMPORAL_ADDRESS);
    project.provide('temporalBinary', process.env.TEMPORAL_CLI_PATH ?? null);
    return;
  }
  const binary = await binaryPath();
  project.provide('temporalBinary', binary);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-temporal-'));
  const started = Date.now();
  server = await startDevServer({ binary, dbFile: path.join(dir, 'temporal.db'), headless: true, logFile: path.join(dir, 'server.log') });
  console.log(`[turnstile tests] Temporal dev server at ${server.address} (pid ${server.pid}, ready in ${Date.now() - started} ms, log ${dir}/server.log)`);
  project.provide('temporalAddress', server.address);
}

export async function teardown(): Promise<void> {
  await server?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
}
