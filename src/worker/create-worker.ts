import { NativeConnection, Worker, bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { activityInterceptors, createActivities, type ActivityDeps } from '../../activities';
import { WORKFLOWS_PATH } from '../paths';
import { installQuietRuntime } from './runtime';
import { connectionSecurity } from '../client/connection-security';

// A Turnstile worker: stateless and identical to every other; run as many as needed on
// the same task queue. The worker owns its connections; activities get theirs from deps.

export interface WorkerOptions {
  address: string;
  namespace: string;
  taskQueue: string;
  deps: ActivityDeps;
  /** A pre-built bundle (tests share one); built from workflows/ when absent. */
  bundle?: WorkflowBundleWithSourceMap;
  maxConcurrentActivities?: number;
  shutdownGraceSecs?: number;
  identity?: string;
}

let cachedBundle: Promise<WorkflowBundleWithSourceMap> | undefined;

/** Bundling takes seconds; do it once per process. */
export function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  cachedBundle ??= bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error } });
  return cachedBundle;
}

export async function createWorker(opts: WorkerOptions): Promise<{ worker: Worker; connection: NativeConnection }> {
  installQuietRuntime(process.env.TURNSTILE_LOG_LEVEL === 'debug' ? 'DEBUG' : 'WARN');
  // TLS / mTLS and the API key from the environment, as every Turnstile process.
  const connection = await NativeConnection.connect({ address: opts.address, ...connectionSecurity() });
  const worker = await Worker.create({
    connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    workflowBundle: opts.bundle ?? (await workflowBundle()),
    activities: createActivities(opts.deps),
    interceptors: { activity: activityInterceptors },
    maxConcurrentActivityTaskExecutions: opts.maxConcurrentActivities ?? 8,
    shutdownGraceTime: `${opts.shutdownGraceSecs ?? 30} s`,
    ...(opts.identity ? { identity: opts.identity } : {}),
  });
  return { worker, connection };
}
