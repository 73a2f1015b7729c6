import fs from 'node:fs';
import path from 'node:path';
import { NativeConnection, Worker, bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { activityInterceptors, createActivities, type ActivityDeps } from '../../activities';
import { dedupThreadsFor, WARM_UP_ROWS } from '../../activities/dedup-threads';
import { STALE_CACHE_GUARD_PATH, WORKFLOWS_PATH } from '../util/project-paths';
import { installQuietRuntime } from './runtime';
import { defaultIdentity, fleetMemory, type FleetMemory } from './fleet-memory';
import { connectionSecurity } from '../client/connection-security';
import { warmUpMergePath } from './warm-up';
import { withWorkflowStackTraces } from './workflow-stack-traces';
import { DEFAULT_ACTIVITY_SLOTS } from './reservation-sizes';
import { buildIdOf } from './build-id';
import { identityWithRoot } from '../messages/worker-identity';
import { reachedRoot } from '../storage/reached-root';

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
  /** Workflows kept in memory between tasks (config worker.maxCachedWorkflows); absent: the SDK's default. */
  maxCachedWorkflows?: number;
  shutdownGraceSecs?: number;
  /** The worker's name (default pid@host); its storage root is appended (src/messages/worker-identity.ts). */
  identity?: string;
  /**
   * The worker's memory budget: activities then reserve bytes and the worker
   * polls only with headroom (fleet-memory.ts). Absent: no admission (tests).
   */
  memoryBudgetBytes?: number;
  /** The SDK's workflow stack traces (workflow-stack-traces.ts); off by default. */
  workflowStackTraces?: boolean;
  /**
   * Poll as a version of this Worker Deployment, with the build id of the bundle
   * (build-id.ts); table runs are then pinned to it. Absent: unversioned (tests that
   * share one server with a task queue each; a deployment version holds at most 100).
   */
  deploymentName?: string | undefined;
  /** A workflow bundle file to run instead of this release's (a previous release's, kept by `dev`). */
  workflowBundleFile?: string;
}

/**
 * How long a table's next workflow task waits on this worker's own (sticky) queue before
 * the server hands it to any worker, which then replays the table's history (the SDK's
 * default is 10 s). On a fleet at capacity tasks wait longer than 10 s; each timeout
 * then cost a replay, the replays cost more CPU, and tasks waited longer still: 1,000
 * tables on 2 cores fell minutes behind with ~2,000 such timeouts (bench/README.md).
 * The price: a task queued for a worker that then dies waits this long
 * (once the dead worker has not polled for 10 s, the server sends its tables' tasks to
 * the others at once).
 */
export const STICKY_QUEUE_TIMEOUT_SECS = 30;

const cachedBundles: Record<'stacks' | 'noStacks', Promise<WorkflowBundleWithSourceMap> | undefined> = { stacks: undefined, noStacks: undefined };

/**
 * The workflow bundle, made once per process (stack traces: workflow-stack-traces.ts):
 * the one `npm run build` wrote beside dist/cli.js when this runs from there, else
 * bundled now from workflows/ (TypeScript sources: tests, tsx).
 */
export function workflowBundle(opts: { stackTraces?: boolean } = {}): Promise<WorkflowBundleWithSourceMap> {
  const which = opts.stackTraces ? 'stacks' : 'noStacks';
  cachedBundles[which] ??= loadOrBundle(opts.stackTraces ?? false);
  return cachedBundles[which];
}

/**
 * dist/workflow-bundle.js, when this code is dist/cli.js (scripts/build.mjs builds both
 * from the same sources, under one stamp). Bundling at start took 0.3-2 s and loaded
 * webpack into the worker: its modules stayed in the heap (a worker's live heap 78 MB,
 * 31 MB of it strings: the bundle's and webpack's sources), and every full garbage
 * collection walked them while the worker prepared merges.
 */
const PREBUILT_BUNDLE = typeof __filename === 'string' && __filename.endsWith('.js') ? path.join(path.dirname(__filename), 'workflow-bundle.js') : null;

async function loadOrBundle(stackTraces: boolean): Promise<WorkflowBundleWithSourceMap> {
  if (PREBUILT_BUNDLE && fs.existsSync(PREBUILT_BUNDLE)) {
    // Its source map is inline; the SDK no longer reads the separate field.
    return withWorkflowStackTraces({ code: await fs.promises.readFile(PREBUILT_BUNDLE, 'utf8'), sourceMap: '' }, stackTraces);
  }
  return bundleWorkflows([], { stackTraces });
}

/** Where a worker's workflow bundle comes from, for its start-up line. */
export const workflowBundleSource = (): string => (PREBUILT_BUNDLE && fs.existsSync(PREBUILT_BUNDLE) ? `prebuilt ${PREBUILT_BUNDLE}` : 'bundled from workflows/ at start');

/** The bundler's logger: its warnings and errors only. */
export const QUIET_BUNDLER_LOGGER = { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error };

/** The workflows bundled, with extra workflow interceptor modules (tests add some). */
export async function bundleWorkflows(interceptorModules: string[] = [], opts: { stackTraces?: boolean } = {}): Promise<WorkflowBundleWithSourceMap> {
  const bundle = await bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    workflowInterceptorModules: [STALE_CACHE_GUARD_PATH, ...interceptorModules],
    logger: QUIET_BUNDLER_LOGGER,
  });
  return withWorkflowStackTraces(bundle, opts.stackTraces ?? false);
}

export interface CreatedWorker {
  worker: Worker;
  connection: NativeConnection;
  /** With a memory budget: its ledger and registry record (call `unregister` after run()). */
  memory?: FleetMemory;
  identity: string;
  /** The build id of the workflow code this worker runs (build-id.ts). */
  buildId: string;
  /** That workflow code (the bundle), as `dev` keeps it for the next release. */
  workflowCode: string;
  /** The deployment it polls as a version of; null when unversioned. */
  deploymentName: string | null;
  unregister(): Promise<void>;
}

/** A bundle from a file: the code as written, source map inline (as dist/workflow-bundle.js). */
export async function bundleFromFile(file: string): Promise<WorkflowBundleWithSourceMap> {
  return { code: await fs.promises.readFile(file, 'utf8'), sourceMap: '' };
}

export async function createWorker(opts: WorkerOptions): Promise<CreatedWorker> {
  installQuietRuntime(process.env.TURNSTILE_LOG_LEVEL === 'debug' ? 'DEBUG' : 'WARN');
  // Started (and warmed up) beside the connection and the bundle, before the worker polls.
  const threads = dedupThreadsFor(opts.deps);
  // Alongside the connection and the bundle; done before the worker can poll. Without a
  // dedup thread this thread prepares merges, so it warms that path up too. A failure
  // only costs the first merge its warm start.
  const warm = warmUpMergePath({ preparationRows: threads ? 0 : WARM_UP_ROWS }).then(
    () => undefined,
    (err: unknown) => console.warn(`worker warm-up skipped: ${err instanceof Error ? err.message : String(err)}`),
  );
  // The root rides in the identity, where clients of the task queue read it before they
  // write (src/client/storage-root-check.ts).
  const identity = identityWithRoot(opts.identity ?? defaultIdentity(), reachedRoot(opts.deps.dataRoot));
  const slots = opts.maxConcurrentActivities ?? DEFAULT_ACTIVITY_SLOTS;
  const memory = opts.memoryBudgetBytes === undefined ? undefined : fleetMemory({ budgetBytes: opts.memoryBudgetBytes, dataRoot: opts.deps.dataRoot, maxSlots: slots });
  // Settled to a value, so a failure waits for the await below instead of being unhandled meanwhile.
  const started = threads?.start().then(
    () => null,
    (err: unknown) => (err instanceof Error ? err : new Error(String(err))),
  );
  const deps = { ...opts.deps, ...(threads ? { dedupThreads: threads } : {}), ...(memory ? { admission: memory.admission, preparedCacheBytes: memory.cacheBytes } : {}) };
  // TLS / mTLS and the API key from the environment, as every Turnstile process.
  const connection = await NativeConnection.connect({ address: opts.address, ...connectionSecurity() });
  const bundle = opts.bundle ?? (opts.workflowBundleFile ? await bundleFromFile(opts.workflowBundleFile) : await workflowBundle({ stackTraces: opts.workflowStackTraces ?? false }));
  const buildId = buildIdOf(bundle.code);
  const worker = await Worker.create({
    connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    workflowBundle: bundle,
    // Table runs are pinned to the build that started them and move to the deployment's
    // current version at continue-as-new (workflows/table.ts): no patch gates. The worker's
    // default pins them, not the workflow: a workflow that names a behavior fails its
    // tasks on unversioned workers (the test suite's).
    ...(opts.deploymentName
      ? { workerDeploymentOptions: { version: { deploymentName: opts.deploymentName, buildId }, useWorkerVersioning: true as const, defaultVersioningBehavior: 'PINNED' as const } }
      : {}),
    activities: createActivities(deps),
    interceptors: { activity: activityInterceptors },
    // The tuner replaces the slot count (the SDK takes one or the other).
    // The SDK's 10 activity pollers each hold a slot (and a claim), so with 8 slots none
    // is left for eager tasks. Polling with half the slots to make room was measured
    // (bench/README.md): a third of the activities came eagerly, but the
    // fewer polls left 1,000 tables' start-up snapshots a minute in the queue. Kept.
    ...(memory ? { tuner: memory.tuner } : { maxConcurrentActivityTaskExecutions: slots }),
    ...(opts.maxCachedWorkflows === undefined ? {} : { maxCachedWorkflows: opts.maxCachedWorkflows }),
    shutdownGraceTime: `${opts.shutdownGraceSecs ?? 30} s`,
    stickyQueueScheduleToStartTimeout: `${STICKY_QUEUE_TIMEOUT_SECS} s`,
    identity,
  });
  await warm;
  const threadFailure = await started;
  if (threadFailure) throw new Error(`worker: dedup threads did not start: ${threadFailure.message}`);
  const unregister = memory?.register(identity, opts.taskQueue, buildId) ?? (async () => undefined);
  return { worker, connection, identity, buildId, workflowCode: bundle.code, deploymentName: opts.deploymentName ?? null, unregister, ...(memory ? { memory } : {}) };
}
