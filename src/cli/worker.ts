import type { Config } from '../config/config-schema';
import { formatBytes } from '../config/bytes';
import { createWorker, workflowBundleSource, type WorkerOptions } from '../worker/create-worker';
import { defaultBudgetBytes } from '../worker/fleet-memory';
import { installRuntime } from '../worker/runtime';
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
export function workerOptionsOf(config: Config): Pick<WorkerOptions, 'deps' | 'maxConcurrentActivities' | 'shutdownGraceSecs' | 'workflowStackTraces'> {
  return {
    deps: { dataRoot: config.dataRoot, prepareCheckpointSecs: config.worker.prepareCheckpointSecs, ...(config.worker.dedupThreads === undefined ? {} : { dedupThreadCount: config.worker.dedupThreads }) },
    maxConcurrentActivities: config.worker.maxConcurrentActivities,
    shutdownGraceSecs: config.worker.shutdownGraceSecs,
    workflowStackTraces: config.worker.workflowStackTraces,
  };
}

/** `turnstile worker`: one stateless worker against TEMPORAL_ADDRESS; scale by running more. */
export async function worker(_p: Parsed): Promise<void> {
  const config = await readCheckedConfig();
  await installWorkerRuntime(config);
  const budget = config.worker.memoryBudgetBytes ?? defaultBudgetBytes();
  const { worker, connection, memory, identity, unregister } = await createWorker({
    ...config.temporal,
    ...workerOptionsOf(config),
    memoryBudgetBytes: budget,
  });
  const from = config.worker.memoryBudgetBytes === undefined ? 'default: half the machine' : 'worker.memoryBudgetBytes';
  console.log(`memory budget ${formatBytes(budget)} (${budget} bytes, ${from}); prepared cache ${formatBytes(memory!.cacheBytes)}, largest unit ${formatBytes(memory!.claimBytes())}`);
  console.log(`workflow bundle: ${workflowBundleSource()}`);
  console.log(`worker on ${config.temporal.address} task queue ${config.temporal.taskQueue}, data ${config.dataRoot}, identity ${identity}`);
  // The SDK's worker shuts down gracefully on SIGINT/SIGTERM by itself: it stops polling
  // and lets running activities finish for worker.shutdownGraceSecs.
  try {
    await worker.run();
  } finally {
    await unregister();
    await connection.close();
  }
}
