import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startDevServer, type DevServer } from '../../src/server/dev-server';
import { bundleWorkflows } from '../../src/worker/create-worker';
import { seaweedBinary, startSeaweedfs, type Seaweed } from '../../src/server/seaweedfs';

// One real Temporal dev server for the whole test run (free ports, a temporary SQLite
// database), or the server at TEMPORAL_ADDRESS when that is set. Tests isolate
// themselves with unique task queues and workflow ids. Tests that start servers of
// their own get the Temporal server binary through inject('temporalBinary'): null when
// TEMPORAL_ADDRESS is set without TEMPORAL_SERVER_PATH (nothing of ours to start; they
// skip, saying so). The UI server, for those that start one, comes from
// TEMPORAL_UI_SERVER_PATH or the cache (src/server/dev-server.ts, uiServerBinary).

//
// Also one SeaweedFS (S3) for the whole run, for the tests that run on both storage
// backends: each gets a fresh prefix of one bucket (inject('s3')); and one bundle of the
// workflow code, in a file (inject('workflowBundleFile'); support/workflow-bundle.ts).

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    temporalBinary: string | null;
    s3: { bucket: string; env: Record<string, string> };
    /** JSON of the workflow bundle as bundled, stack traces on; absent under configs without this setup. */
    workflowBundleFile: string | null;
  }
}

let server: DevServer | undefined;
let dir: string | undefined;
let seaweed: Seaweed | undefined;
let seaweedDir: string | undefined;
let bundleDir: string | undefined;

async function bundleOnce(project: TestProject): Promise<void> {
  bundleDir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-bundle-'));
  const file = path.join(bundleDir, 'workflow-bundle.json');
  fs.writeFileSync(file, JSON.stringify(await bundleWorkflows([], { stackTraces: true })));
  project.provide('workflowBundleFile', file);
}

async function startS3(project: TestProject): Promise<void> {
  const binary = await seaweedBinary();
  seaweedDir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-seaweedfs-'));
  const started = Date.now();
  seaweed = await startSeaweedfs({ binary, dir: seaweedDir, bucket: 'turnstile-tests', logFile: path.join(seaweedDir, 'weed.log') });
  console.log(`[turnstile tests] SeaweedFS S3 at ${seaweed.endpoint} (pid ${seaweed.pid}, ready in ${Date.now() - started} ms, log ${seaweedDir}/weed.log)`);
  project.provide('s3', { bucket: seaweed.bucket, env: seaweed.env });
}

async function binaryPath(): Promise<string> {
  if (process.env.TEMPORAL_SERVER_PATH) return process.env.TEMPORAL_SERVER_PATH;
  // Run directly with `npx vitest`: find or build the server and UI server the way `npm test` does.
  const { ensureTemporal } = (await import(path.resolve(__dirname, '../../scripts/ensure-temporal.mjs'))) as {
    ensureTemporal(): { binary?: string; ui?: string | null; address?: string };
  };
  const r = ensureTemporal();
  if (!r.binary) throw new Error('no Temporal binary');
  // For the tests that start a server with its UI (and `turnstile dev` processes they spawn).
  if (r.ui && !process.env.TEMPORAL_UI_SERVER_PATH) process.env.TEMPORAL_UI_SERVER_PATH = r.ui;
  return r.binary;
}

export async function setup(project: TestProject): Promise<void> {
  await Promise.all([startS3(project), startTemporal(project), bundleOnce(project)]);
}

async function startTemporal(project: TestProject): Promise<void> {
  if (process.env.TEMPORAL_ADDRESS) {
    project.provide('temporalAddress', process.env.TEMPORAL_ADDRESS);
    project.provide('temporalBinary', process.env.TEMPORAL_SERVER_PATH ?? null);
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
  await Promise.all([server?.stop(), seaweed?.stop()]);
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  if (seaweedDir) fs.rmSync(seaweedDir, { recursive: true, force: true });
  if (bundleDir) fs.rmSync(bundleDir, { recursive: true, force: true });
}
