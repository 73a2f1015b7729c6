import { z } from 'zod';
import type { Policy } from '../policy/types';
import { formatZodError } from '../util/zod-format';

// The per-table policy: one zod schema, defaults for every key. Pure (no I/O), so the
// workflow's update validator uses the same schema as the CLI and the config loader.

const num = (min: number, max: number, def: number, int = true) => {
  const range = `${int ? 'an integer' : 'a number'} in [${min}, ${max}]`;
  let s = z.number({ invalid_type_error: `must be ${range}` });
  if (int) s = s.int({ message: `must be ${range}` });
  return s.min(min, { message: `must be ${range}` }).max(max, { message: `must be ${range}` }).default(def);
};
const cls = (def: 1 | 2 | 3 | 4) =>
  z.union([z.literal(1), z.literal(2), z.literal(3), z.literal(4)], { errorMap: () => ({ message: 'must be a class 1, 2, 3 or 4' }) }).default(def);
const DAY = 86_400;

const perKind = <T extends z.ZodTypeAny>(merge: T, optimize: T, index: T, gc: T) =>
  z.object({ merge, optimize, index, gc }).strict().default({} as never);

export const policySchema = z
  .object({
    maxConsecutiveTurns: perKind(num(1, 1000, 4), num(1, 1000, 1), num(1, 1000, 1), num(1, 1000, 1)),
    maxTurnWaitSecs: perKind(num(1, DAY, 60), num(1, DAY, 120), num(1, DAY, 300), num(1, DAY, 600)),
    stallSecs: z.object({ read: num(1, 3600, 30), encode: num(1, 3600, 30), commit: num(1, 3600, 60) }).strict().default({}),
    classes: perKind(cls(2), cls(3), cls(3), cls(4)),
    basePriority: perKind(num(0, 1000, 3, false), num(0, 1000, 2, false), num(0, 1000, 2, false), num(0, 1000, 1, false)),
    agingPerSec: num(0, 1000, 0.1, false),
    softBacklog: num(0, 1_000_000, 100),
    hardBacklog: num(1, 1_000_000, 1000),
    maxWriteDelayMs: num(0, 600_000, 2000),
    maxConcurrentPreparations: num(1, 64, 4),
    directMergeMaxBytes: num(0, 2 ** 30, 2 ** 20),
    snapshotIntervalSecs: num(1, DAY, 300),
    snapshotMaxIntervalSecs: num(1, DAY, 21_600),
    periodSecs: z.object({ optimize: num(0, 30 * DAY, 300), index: num(0, 30 * DAY, 600), gc: num(0, 30 * DAY, 900) }).strict().default({}),
    periodicWhenIdle: z.boolean({ invalid_type_error: 'must be true or false' }).default(false),
    retentionSecs: num(0, 365 * DAY, DAY),
    commitRetryBaseSecs: num(0, 3600, 1, false),
    commitRetryMaxSecs: num(0, DAY, 60, false),
    commitAdmissionWaitSecs: num(0, 3600, 10, false),
    compactAtSmallFragments: num(2, 1_000_000, 32),
    indexAtUnindexedShare: num(0, 1, 0.1, false),
    pruneAtVersions: num(1, 1_000_000, 20),
    conflictRetries: num(0, 100, 8),
    conflictBackoffMaxSecs: num(0, 600, 2, false),
  })
  .strict()
  .superRefine((p, ctx) => {
    if (p.hardBacklog <= p.softBacklog) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, path: ['hardBacklog'], message: `must be greater than softBacklog (${p.softBacklog})` });
    }
  }) satisfies z.ZodType<Policy, z.ZodTypeDef, unknown>;

/** A per-table override: the same keys, every one optional, unknown keys rejected. */
export type PolicyOverride = { [K in keyof Policy]?: Policy[K] extends object ? Partial<Policy[K]> : Policy[K] };

/** Documentation of every key: README's policy table has these words (test/readme.test.ts checks it). */
export const POLICY_DOCS: Record<keyof Policy, string> = {
  maxConsecutiveTurns: 'per kind: most turns a kind takes in a row while another kind is commit-ready',
  maxTurnWaitSecs: "per kind: a commit-ready unit waiting this long is promoted to class 1 (durable timer); a plan no worker took from the task queue within it is asked for again at the merge preparations' priority",
  stallSecs: 'per phase (read, encode, commit): no progress for this long = stalled (activity heartbeat timeout)',
  classes: 'per kind: default scheduling class 1..4 (1 most urgent); merge is 1 while backlog > softBacklog',
  basePriority: 'per kind: priority within a class before aging',
  agingPerSec: 'priority gained per second of waiting for the turn',
  softBacklog: 'backlog (generations) at or below which writePressure is 0',
  hardBacklog: 'backlog at which writePressure is 1 and seals are refused (retryable); must exceed softBacklog',
  maxWriteDelayMs: 'writers wait writePressure * this before each seal',
  maxConcurrentPreparations: 'most units of one table preparing at once',
  directMergeMaxBytes: 'a merge of a single generation of at most this many bytes (as its writer reported them in the demand signal) has no preparation activity: its commit reads, checks and deduplicates the file itself (one activity and one workflow task less per generation); 0 = always prepare',
  snapshotIntervalSecs: 'period of the generation-store scan that corrects watermarks, right after activity (a demand signal, a merge, a scan that found something, an operator action)',
  snapshotMaxIntervalSecs: 'while nothing happens the scan period doubles up to this (a new table starts here); the bound on how late a lost demand signal is noticed when no worker sweeps the store (worker.sweepSecs 0)',
  periodSecs: 'per kind (optimize, index, gc): at most one run per period, and only after a change (see periodicWhenIdle); the first run of a new table falls at a point of its first period set by a hash of its name, so tables created together do not all run in the same second; 0 = only when bumped',
  periodicWhenIdle: 'false: optimize and index run only after the table version moved, gc only after a merge, since their last run (or when bumped); true: every period regardless',
  retentionSecs: 'optimize prunes table versions older than this',
  commitRetryBaseSecs: 'a failed commit may retry after min(base * 2^(n-1), max) seconds',
  commitRetryMaxSecs: 'upper bound of that backoff',
  commitAdmissionWaitSecs:
    'a commit no worker takes within this long (no memory headroom in the fleet) gives the turn back and waits min(this * 2^(n-1), max(this, commitRetryMaxSecs)) before taking it again; 0 = wait in the task queue holding the turn',
  compactAtSmallFragments: 'adopted tables: compaction (optimize) is due once the table has this many small fragments',
  indexAtUnindexedShare: 'adopted tables: an index is rebuilt once this share of the rows (0..1) is not covered by it',
  pruneAtVersions: 'adopted tables: versions are pruned (optimize) once this many are older than retentionSecs',
  conflictRetries: 'adopted tables: a commit that loses a race with an outside writer is retried this many times within its turn',
  conflictBackoffMaxSecs: 'adopted tables: the nth of those retries waits a random time up to min(0.1 * 2^(n-1), this) seconds',
};

/**
 * What `table adopt` layers under the user's override: an outside table changes without
 * telling Turnstile, so it is looked at every 2 s while it changes (backing off to
 * snapshotMaxIntervalSecs when quiet), and compaction may come every 5 s: a compaction
 * of few small fragments is short, and a short one rarely loses to an outside update
 * (activities/adopted.ts).
 */
export const ADOPTED_POLICY: PolicyOverride = {
  snapshotIntervalSecs: 2,
  snapshotMaxIntervalSecs: 120,
  periodSecs: { optimize: 5, index: 60, gc: 60 },
};

export type PolicyResult = { ok: true; policy: Policy } | { ok: false; error: string };

/** Validates a complete policy object (defaults filled in). */
export function parsePolicy(input: unknown, prefix = ''): PolicyResult {
  const r = policySchema.safeParse(input ?? {});
  return r.success ? { ok: true, policy: r.data } : { ok: false, error: formatZodError(r.error, prefix) };
}

/** Applies a per-table override on top of a base policy and validates the result. */
export function applyOverride(base: Policy, override: unknown): PolicyResult {
  if (override === null || typeof override !== 'object' || Array.isArray(override)) {
    return { ok: false, error: 'policy: must be a JSON object' };
  }
  return parsePolicy(layer(base as unknown as Record<string, unknown>, override as Record<string, unknown>));
}

/** `over` on top of `under`, one level deep: per-kind maps merge key by key. */
function layer(under: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...under };
  for (const [k, v] of Object.entries(over)) {
    const cur = under[k];
    merged[k] = cur && typeof cur === 'object' && v && typeof v === 'object' && !Array.isArray(v) ? { ...cur, ...v } : v;
  }
  return merged;
}

/** Two overrides as one (the later wins key by key), e.g. table.json's plus a `policy --set`. */
export function combineOverrides(earlier: PolicyOverride | undefined, later: PolicyOverride): PolicyOverride {
  return layer((earlier ?? {}) as Record<string, unknown>, later as Record<string, unknown>) as PolicyOverride;
}

export const defaultPolicy = (): Policy => policySchema.parse({});
