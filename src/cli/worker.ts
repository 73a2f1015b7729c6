import { createWorker } from '../worker/create-worker';
import { type Parsed } from './args';
import { readConfig } from './context';

/** `turnstile worker`: one stateless worker against TEMPORAL_ADDRESS; scale by running more. */
export async function worker(_p: Parsed): Promise<void> {
  const config = readConfig();
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
