import fs from 'node:fs';
import path from 'node:path';
import { startDevServer, type DevServer } from '../server/dev-server';
import { startOwnSeaweedfs, type Seaweed } from '../server/seaweedfs';
import { createWorker } from '../worker/create-worker';
import { defaultBudgetBytes } from '../worker/fleet-memory';
import { formatBytes } from '../config/bytes';
import { PROJECT_ROOT } from '../util/project-paths';
import { int, str, type Parsed } from './args';
import { UsageError } from '../messages/errors';
import { versioned } from '../config/config-schema';
import { readCheckedConfig } from './context';
import { runDemo } from './demo';
import { installWorkerRuntime, sweeperOf, workerOptionsOf } from './worker';
import { carryPreviousReleases, type DevWorker } from './dev-releases';
import { connectClient } from '../client/connect';
import { clientEnv, exportLines } from './client-exports';

// `turnstile dev`: the embedded default. Starts (or reuses) the Temporal dev server with
// SQLite under --data, N workers, optionally the demo, and stops everything it started
// on Ctrl-C. `--storage s3` also starts SeaweedFS and keeps the tables in its bucket.

/** Starts the embedded SeaweedFS and points this process (workers, Lance) at it. */
async function startEmbeddedS3(dir: string): Promise<Seaweed> {
  try {
    return await startOwnSeaweedfs(dir, 'turnstile');
  } catch (e) {
    throw new UsageError(`dev: could not start SeaweedFS (log: ${path.join(dir, 'seaweedfs.log')}): ${(e as Error).message.split('\n')[0]}`);
  }
}

/** The Temporal server binary and, when found or built, the UI server's (scripts/ensure-temporal.mjs). */
async function temporalBinaries(): Promise<{ binary: string; ui?: string }> {
  if (process.env.TEMPORAL_SERVER_PATH) return { binary: process.env.TEMPORAL_SERVER_PATH };
  const mod = (await import(path.join(PROJECT_ROOT, 'scripts', 'ensure-temporal.mjs'))) as { ensureTemporal(): { binary?: string; ui?: string | null } };
  const r = mod.ensureTemporal();
  return { binary: r.binary!, ...(r.ui ? { ui: r.ui } : {}) };
}

export async function dev(p: Parsed): Promise<void> {
  const dir = path.resolve(str(p, 'data') ?? '.turnstile');
  const port = int(p, 'port', 1, 65535, 7233);
  const uiPort = int(p, 'ui-port', 1, 65535, 8233);
  const workerCount = int(p, 'workers', 1, 32, 1);
  const storage = str(p, 'storage') ?? 'fs';
  if (storage !== 'fs' && storage !== 's3') throw new UsageError(`--storage: ${JSON.stringify(storage)} is not valid; accepted: fs, s3`);
  fs.mkdirSync(dir, { recursive: true });
  const s3 = storage === 's3' ? await startEmbeddedS3(dir) : undefined;

  let server: DevServer | undefined;
  const external = process.env.TEMPORAL_ADDRESS;
  if (!external) {
    const { binary, ui } = await temporalBinaries();
    try {
      server = await startDevServer({ binary, ...(ui ? { uiBinary: ui } : {}), dbFile: path.join(dir, 'temporal.db'), port, uiPort, logFile: path.join(dir, 'temporal.log') });
    } catch (e) {
      throw new UsageError(`dev: could not start the Temporal dev server on port ${port} / UI ${uiPort} (in use? try --port/--ui-port; log: ${path.join(dir, 'temporal.log')}): ${(e as Error).message}`);
    }
  }
  const data = s3 ? 's3://turnstile/data' : (process.env.TURNSTILE_DATA ?? path.join(dir, 'data'));
  const config = await readCheckedConfig({ ...process.env, TEMPORAL_ADDRESS: server?.address ?? external, TURNSTILE_DATA: data });
  console.log(`Temporal gRPC: ${config.temporal.address}  namespace: ${config.temporal.namespace}`);
  console.log(`Temporal UI:   ${server?.uiUrl ?? '(external server)'}`);
  console.log(`Data:          ${config.dataRoot}`);
  if (s3) console.log(`S3 (SeaweedFS): ${s3.endpoint}, bucket ${s3.bucket}`);
  if (server) console.log(`Server metrics: ${server.metricsUrl}`);
  await installWorkerRuntime(config, 'Metrics:      ');

  const workers: DevWorker[] = [];
  // The budget is the process's: its workers share it.
  const budget = Math.floor((config.worker.memoryBudgetBytes ?? defaultBudgetBytes()) / workerCount);
  const startWorker = async (i: number | string, bundleFile?: string) => {
    const created = await createWorker({
      ...config.temporal,
      ...workerOptionsOf(config),
      ...(bundleFile ? { workflowBundleFile: bundleFile } : {}),
      identity: `turnstile-dev-${process.pid}-${i}`,
      memoryBudgetBytes: budget,
    });
    const sweeper = sweeperOf(config, created.identity);
    const w = { worker: created.worker, run: created.worker.run(), close: async () => {
      await sweeper.stop();
      await created.unregister();
      await created.connection.close();
    } };
    workers.push(w);
    return { ...w, created };
  };
  let current = (await startWorker(0)).created;
  for (let i = 1; i < workerCount; i++) current = (await startWorker(i)).created;
  console.log(`Workers:       ${workerCount} on task queue ${config.temporal.taskQueue}, memory budget ${formatBytes(budget)} each`);
  console.log(`Version:       ${current.buildId} of deployment ${config.temporal.deploymentName}`);
  // Open while dev runs: the watcher of previous releases uses it.
  const releases = !versioned(config) ? { stopWatching() {} } : await carryPreviousReleases({
    dataDir: dir,
    client: await connectClient(config.temporal),
    deploymentName: config.temporal.deploymentName,
    buildId: current.buildId,
    workflowCode: current.workflowCode,
    startWorker: (file, buildId) => startWorker(`prev-${buildId}`, file),
    log: (line) => console.log(`Upgrade:       ${line}`),
  });

  const stopDemo = new AbortController();
  let stopping = false;
  const stop = async (why: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`\n${why}: stopping workers and the server ...`);
    stopDemo.abort();
    releases.stopWatching();
    for (const w of workers) if (w.worker.getState() === 'RUNNING') w.worker.shutdown();
    await Promise.allSettled(workers.map((w) => w.run));
    await Promise.allSettled(workers.map((w) => w.close()));
    await server?.stop();
    await s3?.stop();
    console.log('stopped.');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('Ctrl-C'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  if (s3) {
    // Without these a second terminal writes under the default local root, where no worker looks.
    console.log('Other terminals: export these first (a client on another storage root is refused):');
    for (const line of exportLines(clientEnv(config, s3.env))) console.log(`  ${line}`);
  }
  console.log('Running; Ctrl-C stops everything started here.');

  if (p.flags.demo) {
    await runDemo(config, stopDemo.signal).catch((e: Error) => {
      if (!stopping) console.error(`demo failed: ${e.message}`);
    });
  }
  await Promise.all(workers.map((w) => w.run));
}
