import { z } from 'zod';
import { policySchema } from './policy-schema';
import { DEFAULT_ACTIVITY_SLOTS } from '../worker/reservation-sizes';
import { formatZodError } from '../util/zod-format';
import { BYTE_SIZE_FORM, parseByteSize } from './bytes';
import type { Policy } from '../policy/types';

// The process-wide configuration: one schema, loaded by a pure function of
// (environment, parsed config file). The environment wins over the file.

/** How often a fleet reads the generation store for seals nobody signalled (src/worker/store-sweeper.ts). */
export const DEFAULT_SWEEP_SECS = 120;

/**
 * Table workflows a worker keeps in memory between their tasks (the SDK's sticky cache).
 * Each costs ~0.7 MiB of heap; the SDK's default (600 per GiB of heap limit, ~2,300 on a
 * 4 GiB heap) let a worker of 5,000 mostly idle tables grow to 3.4-3.8 GiB, whose
 * garbage collections held workflow tasks for seconds (bench/README.md, "Many tables").
 * A table evicted from the cache replays its run's history at its next task.
 */
export const DEFAULT_MAX_CACHED_WORKFLOWS = 800;

export const configSchema = z
  .object({
    temporal: z
      .object({
        address: z.string().min(1).default('127.0.0.1:7233'),
        namespace: z.string().min(1).default('default'),
        taskQueue: z.string().min(1).default('turnstile'),
        // The Worker Deployment the workers poll as versions of (src/worker/build-id.ts); off: unversioned.
        deploymentName: z.string().regex(/^[A-Za-z0-9_-]{1,100}$/, { message: 'must be 1-100 letters, digits, _ or -' }).default('turnstile'),
      })
      .strict()
      .default({}),
    dataRoot: z.string().min(1).default('.turnstile/data'),
    worker: z
      .object({
        maxConcurrentActivities: z.number().int().min(1, { message: 'must be an integer in [1, 256]' }).max(256, { message: 'must be an integer in [1, 256]' }).default(DEFAULT_ACTIVITY_SLOTS),
        shutdownGraceSecs: z.number().int().min(0, { message: 'must be an integer in [0, 600]' }).max(600, { message: 'must be an integer in [0, 600]' }).default(30),
        prepareCheckpointSecs: z.number().min(0, { message: 'must be a number in [0, 3600]' }).max(3600, { message: 'must be a number in [0, 3600]' }).default(10),
        // The fleet's store sweep (src/worker/store-sweeper.ts); 0: none, the tables' own scans alone.
        sweepSecs: z
          .preprocess((v) => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v), z.number({ invalid_type_error: 'must be an integer in [0, 86400] (env TURNSTILE_SWEEP_SECS)' }).int({ message: 'must be an integer in [0, 86400]' }).min(0, { message: 'must be an integer in [0, 86400]' }).max(86400, { message: 'must be an integer in [0, 86400]' }))
          .default(DEFAULT_SWEEP_SECS),
        maxCachedWorkflows: z
          .preprocess((v) => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v), z.number({ invalid_type_error: 'must be an integer in [2, 100000] (env TURNSTILE_MAX_CACHED_WORKFLOWS)' }).int({ message: 'must be an integer in [2, 100000]' }).min(2, { message: 'must be an integer in [2, 100000]' }).max(100000, { message: 'must be an integer in [2, 100000]' }))
          .default(DEFAULT_MAX_CACHED_WORKFLOWS),
        // Absent: one fewer than the cores, at most 4, none on two cores or fewer (resolved where the worker starts: os is not pure). 0: on the worker's own thread.
        dedupThreads: z
          .preprocess((v) => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v), z.number({ invalid_type_error: 'must be an integer in [0, 16] (env TURNSTILE_DEDUP_THREADS)' }).int({ message: 'must be an integer in [0, 16]' }).min(0, { message: 'must be an integer in [0, 16]' }).max(16, { message: 'must be an integer in [0, 16]' }))
          .optional(),
        // Off: the SDK's workflow stack traces cost a third of each activation (src/worker/workflow-stack-traces.ts).
        workflowStackTraces: z
          .preprocess((v) => (v === '1' || v === 'true' ? true : v === '0' || v === 'false' ? false : v), z.boolean({ invalid_type_error: 'must be true or false (env TURNSTILE_WORKFLOW_STACK_TRACES: 1, 0, true or false)' }))
          .default(false),
        // Port 0 picks a free port (printed at start), so several workers on one host never collide.
        metricsAddress: z
          .string()
          .regex(/^(off|[^\s:]+:\d{1,5})$/, { message: "must be HOST:PORT (port 0: any free port) or 'off'" })
          .default('127.0.0.1:0'),
        // A workflow bundle file to run instead of this release's (npm start keeps the previous release's this way).
        workflowBundle: z.string().min(1).optional(),
        // Absent: half the machine's memory, resolved where the worker starts (os is not pure).
        memoryBudgetBytes: z
          .union([z.number(), z.string()])
          .transform((v, ctx) => {
            const bytes = parseByteSize(v);
            if (bytes === null) ctx.addIssue({ code: z.ZodIssueCode.custom, message: `must be ${BYTE_SIZE_FORM} (env TURNSTILE_WORKER_MEMORY); got ${JSON.stringify(v)}` });
            return bytes ?? 0;
          })
          .optional(),
      })
      .strict()
      .default({}),
    policy: policySchema.default({}),
  })
  .strict() satisfies z.ZodType<Config, z.ZodTypeDef, unknown>;

export interface Config {
  temporal: { address: string; namespace: string; taskQueue: string; deploymentName: string };
  dataRoot: string;
  worker: { maxConcurrentActivities: number; shutdownGraceSecs: number; prepareCheckpointSecs: number; sweepSecs: number; maxCachedWorkflows: number; dedupThreads?: number | undefined; workflowStackTraces: boolean; metricsAddress: string; memoryBudgetBytes?: number | undefined; workflowBundle?: string | undefined };
  policy: Policy;
}

/** Environment variables that override the file, and the key each one sets. */
/** `temporal.deploymentName: off` polls unversioned: test suites whose in-process workers share the task queue. */
export const versioned = (config: Config): boolean => config.temporal.deploymentName !== 'off';

export const ENV_KEYS: Record<string, string[]> = {
  TEMPORAL_ADDRESS: ['temporal', 'address'],
  TEMPORAL_NAMESPACE: ['temporal', 'namespace'],
  TURNSTILE_TASK_QUEUE: ['temporal', 'taskQueue'],
  TURNSTILE_DEPLOYMENT: ['temporal', 'deploymentName'],
  TURNSTILE_WORKFLOW_BUNDLE: ['worker', 'workflowBundle'],
  TURNSTILE_DATA: ['dataRoot'],
  TURNSTILE_METRICS_ADDRESS: ['worker', 'metricsAddress'],
  TURNSTILE_WORKER_MEMORY: ['worker', 'memoryBudgetBytes'],
  TURNSTILE_DEDUP_THREADS: ['worker', 'dedupThreads'],
  TURNSTILE_SWEEP_SECS: ['worker', 'sweepSecs'],
  TURNSTILE_MAX_CACHED_WORKFLOWS: ['worker', 'maxCachedWorkflows'],
  TURNSTILE_WORKFLOW_STACK_TRACES: ['worker', 'workflowStackTraces'],
};

export type ConfigResult = { ok: true; config: Config } | { ok: false; error: string };

/** Pure: `file` is the parsed JSON of the config file (or undefined). */
export function loadConfig(env: Record<string, string | undefined>, file: unknown): ConfigResult {
  if (file !== undefined && (file === null || typeof file !== 'object' || Array.isArray(file))) {
    return { ok: false, error: 'config file: must be a JSON object' };
  }
  const merged = structuredClone((file ?? {}) as Record<string, unknown>);
  for (const [name, [section, key]] of Object.entries(ENV_KEYS)) {
    const value = env[name];
    if (value === undefined || value === '') continue;
    if (key === undefined) merged[section!] = value;
    else merged[section!] = { ...((merged[section!] as object) ?? {}), [key]: value };
  }
  const r = configSchema.safeParse(merged);
  return r.success ? { ok: true, config: r.data } : { ok: false, error: formatZodError(r.error) };
}
