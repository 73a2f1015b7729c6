import path from 'node:path';
import type { Client } from '@temporalio/client';
import { versioned, type Config } from '../config/config-schema';
import { formatBytes } from '../config/bytes';
import { createWorker, workflowBundleSource, type WorkerOptions } from '../worker/create-worker';
import { defaultBudgetBytes } from '../worker/fleet-memory';
import { installRuntime } from '../worker/runtime';
import { startStoreSweeper } from '../worker/store-sweeper';
import { type Parsed } from './args';
import { readCheckedConfig } from './context';

/**
 * Installs the process's runtime with the Prometheus endpoint of `worker.metricsAddress`
 * (before any worker exists: the runtime can be installed once) and prints where it is.
 */
export async function installWorkerRuntime(config: Config, label = 'Metrics:'): Promise<void> {
  const address = config.worker.metricsAddress === 'off' ? null : config.worker.metricsAddress;
  const bound = await installRuntime({ level: process.env.TURNSTILE_LOG_LEVEL === 'debug' ? 'DEBUG' : 'WARN', metricsAddress: address });
  if (bound) console.log(`${label} http://${bound}/metrics`);
}

/** What `worker` and `dev` pass every worker from the configuration. */
export function workerOptionsOf(config: Config): Pick<WorkerOptions, 'deps' | 'maxConcurrentActivities' | 'maxCachedWorkflows' | 'shutdownGraceSecs' | 'workflowStackTraces' | 'deploymentName' | 'workflowBundleFile'> {
  return {
    // Explicit: callers spread config.temporal (which holds the name, `off` too) before this.
    deploymentName: versioned(config) ? config.temporal.deploymentName : undefined,
    ...(config.worker.workflowBundle ? { workflowBundleFile: path.resolve(config.worker.workflowBundle) } : {}),
    deps: { dataRoot: config.dataRoot, prepareCheckpointSecs: config.worker.prepareCheckpointSecs, ...(config.worker.dedupThreads === undefined ? {} : { dedupThreadCount: config.worker.dedupThreads }) },
    maxConcurrentActivities: config.worker.maxConcurrentActivities,
    maxCachedWorkflows: config.worker.maxCachedWorkflows,
    shutdownGraceSecs: config.worker.shutdownGraceSecs,
    workflowStackTraces: config.worker.workflowStackTraces,
  };
}

/** The store sweep beside a worker (worker.sweepSecs; 0: none); stop() before the process ends. */
export function sweeperOf(config: Config, identity: string): { stop(): Promise<void> } {
  if (config.worker.sweepSecs === 0) return { stop: async () => undefined };
  let client: Promise<Client> | undefined;
  const sweeper = startStoreSweeper({
    dataRoot: config.dataRoot,
    taskQueue: config.temporal.taskQueue,
    identity,
    everySecs: config.worker.sweepSecs,
    client: () => (client ??= import('../client/connect').then(({ connectClient }) => connectClient(config.temporal))),
    log: (line) => console.log(line),
  });
  return {
    async stop() {
      await sweeper.stop();
      if (client) await (await client).connection.close();
    },
  };
}

/** `turnstile worker`: one stateless worker against TEMPORAL_ADDRESS; scale by running more. */
export async function worker(_p: Parsed): Promise<void> {
  const config = await readCheckedConfig();
  await installWorkerRuntime(config);
  const budget = config.worker.memoryBudgetBytes ?? defaultBudgetBytes();
  const { worker, connection, memory, identity, buildId, unregister } = await createWorker({
    ...config.temporal,
    ...workerOptionsOf(config),
    memoryBudgetBytes: budget,
  });
  const from = config.worker.memoryBudgetBytes === undefined ? 'default: half the machine' : 'worker.memoryBudgetBytes';
  console.log(`memory budget ${formatBytes(budget)} (${budget} bytes, ${from}); prepared cache ${formatBytes(memory!.cacheBytes)}, largest unit ${formatBytes(memory!.claimBytes())}`);
  console.log(`workflow bundle: ${config.worker.workflowBundle ?? workflowBundleSource()}`);
  console.log(`worker on ${config.temporal.address} task queue ${config.temporal.taskQueue}, data ${config.dataRoot}, identity ${identity}`);
  console.log(versioned(config) ? `deployment ${config.temporal.deploymentName}, version ${buildId}` : `unversioned (temporal.deploymentName off), build ${buildId}`);
  // The SDK's worker shuts down gracefully on SIGINT/SIGTERM by itself: it stops polling
  // and lets running activities finish for worker.shutdownGraceSecs.
  const running = worker.run();
  const sweeper = sweeperOf(config, identity);
  try {
    await Promise.all([running, versioned(config) ? reportRouting(config, buildId) : undefined]);
  } finally {
    await sweeper.stop();
    await unregister();
    await connection.close();
  }
}

/** The first version of a deployment becomes current by itself; a later one says how to make it so. */
async function reportRouting(config: Config, buildId: string): Promise<void> {
  const [{ connectClient }, { settleRouting }] = await Promise.all([import('../client/connect'), import('../client/deployment')]);
  const client = await connectClient(config.temporal);
  try {
    const r = await settleRouting(client, config.temporal.deploymentName, buildId, 'if-none', `turnstile-worker@${process.pid}`);
    if (r.changed) console.log(`version ${buildId} is now current (the deployment had none)`);
    else if (r.current !== buildId) console.log(`version ${buildId} is not current (current: ${r.current}); \`turnstile upgrade set-current ${buildId}\` moves the tables here`);
  } catch (e) {
    console.warn(`deployment routing not checked: ${(e as Error).message.split('\n')[0]}`);
  } finally {
    await client.connection.close();
  }
}
