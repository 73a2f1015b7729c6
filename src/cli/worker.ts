import type { Config } from '../config/config-schema';
import { createWorker } from '../worker/create-worker';
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

/** `turnstile worker`: one stateless worker against TEMPORAL_ADDRESS; scale by running more. */
export async function worker(_p: Parsed): Promise<void> {
  const config = await readCheckedConfig();
  await installWorkerRuntime(config);
  const { worker, connection } = await createWorker({
    ...config.temporal,
    deps: { dataRoot: config.dataRoot, prepareCheckpointSecs: config.worker.prepareCheckpointSecs },
    maxConcurrentActivities: config.worker.maxConcurrentActivities,
    shutdownGraceSecs: config.worker.shutdownGraceSecs,
  });
  console.log(`worker on ${config.temporal.address} task queue ${config.temporal.taskQueue}, data ${config.dataRoot}`);
  // The SDK's worker shuts down gracefully on SIGINT/SIGTERM by itself.
  await worker.run();
  await connection.close();
}
