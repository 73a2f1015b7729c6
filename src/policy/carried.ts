import { z } from 'zod';
import { policySchema } from '../config/policy-schema';
import { INDEX_TYPES } from '../messages/index-spec';
import { formatZodError } from '../util/zod-format';
import type { RateSample } from './drain-eta';
import type { AdoptedLog } from './adopted-log';
import type { Grant } from './grants';
import { MAX_BUCKETS, MAX_SHARDS_NAMED, type DemandRecord } from './demand-record';
import type { UnitHistory } from './unit-history';
import { marks } from './initial';
import { KINDS, type TableState } from './types';

// The carried state: what a table run hands the next one at continue-as-new (the
// `carried` field of the table workflow's input). Table runs are pinned to the build that
// started them and move to the current build at continue-as-new, so this is the contract
// between releases (DESIGN.md, "Releases and upgrades"): a release parses what the
// previous release carried, with defaults for whatever that one lacks, and
// test/policy/carried.test.ts holds it to the inputs the previous release recorded
// (test/fixtures/carried-<release>.json).
//
// formatVersion says which format wrote it: absent = 1 (release 0.1.0), 2 since 0.2.0, 3
// since 0.4.0.
// To change the format: add fields with defaults here (never give an existing field
// another meaning), raise CARRIED_FORMAT, and once released, record its inputs as the
// next fixture. Keys this release does not know are dropped, not refused, and a newer
// formatVersion is read as far as this release knows it: a rollback moves runs back to
// the previous release the same way, at continue-as-new.
//
// Pure (no Temporal): the workflow parses with it, the tests without a server.

/** The format this release writes. */
export const CARRIED_FORMAT = 3;

/** What a run carries across continue-as-new, as this release reads and writes it. */
export interface Carried {
  formatVersion: number;
  state: TableState;
  /** Units whose commit stalled and has not committed since (status: stalled). */
  stalled: string[];
  /** The drain ETA's window (drain-eta.ts). */
  rates: RateSample[];
  /** The last turn grants (grants.ts). */
  grants: Grant[];
  /** Adopted tables: decisions and looks for shadow-report (adopted-log.ts). */
  adoptedLog?: AdoptedLog;
  /** The maintenance history with its cost (unit-history.ts); absent before 0.4.0. */
  history?: UnitHistory;
  /** Demand and unit durations for the policy dry run (demand-record.ts); absent before 0.4.0. */
  demand?: DemandRecord;
}

const count = z.number().int().nonnegative();
const ms = z.number();
const kind = z.enum(KINDS);
const perKind = <T extends z.ZodTypeAny>(t: T) => z.object({ merge: t, optimize: t, index: t, gc: t });

/** The policy as carried, on the policy schema: keys it lacks get their defaults, keys it does not know are dropped. */
const POLICY_KEYS = new Set(Object.keys(policySchema.innerType().shape));
const carriedPolicy = z.preprocess(
  (v) => (v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).filter(([k]) => POLICY_KEYS.has(k))) : v),
  policySchema,
);

const shard = z.object({
  shard: z.string().min(1),
  sealedThroughSeq: count,
  sealedRevision: count,
  mergedThroughSeq: count,
  heldReason: z.string().nullable(),
  sealedBytes: count.optional(),
});

// What preparations hand to commits (src/policy/unit-results.ts): produced and read by the
// activities, carried by the core without reading; unknown keys are kept.
const preparedMerge = z
  .object({
    shard: z.string(),
    fromSeq: count,
    toSeq: count,
    preparedPath: z.string().nullable(),
    rows: count,
    bytes: count,
    attempt: count,
    resumedFromFile: count,
    resumedVia: z.enum(['heartbeat', 'scan', 'batch']).nullable(),
    timings: z.object({ readMs: z.number(), dedupeMs: z.number(), encodeMs: z.number() }).passthrough().optional(),
    maxBatchBytes: count.optional(),
    direct: z.boolean().optional(),
  })
  .passthrough();
const optimizePlan = z
  .object({ needed: z.boolean(), reason: z.string(), numFragments: count, numSmallFragments: count, unindexedRows: count, versionsPastRetention: count.optional() })
  .passthrough();
const indexPlan = z
  .object({ missing: z.array(z.object({ column: z.string(), type: z.enum(INDEX_TYPES) }).passthrough()), configured: count.optional() })
  .passthrough();
const gcPlan = z.object({ files: z.array(z.string()), tempFiles: z.array(z.string()) }).passthrough();

const unitCommon = {
  id: z.string().min(1),
  state: z.enum(['preparing', 'ready', 'committing', 'backoff']),
  createdAtMs: ms,
  readySinceMs: ms.nullable(),
  promotedAtMs: ms.nullable(),
  notBeforeMs: ms.nullable(),
  commitAttempts: count,
  reservedBytes: count,
  lastError: z.string().nullable(),
  solo: z.boolean().optional(),
  emptyPrepared: z.boolean().optional(),
  waitingForBytes: count.optional(),
  headroomWaits: count.optional(),
  scanned: z.boolean().optional(),
  rider: z.literal(true).optional(),
};
const periodicUnit = <K extends 'optimize' | 'index' | 'gc', P extends z.ZodTypeAny>(k: K, prepared: P) =>
  z.object({ ...unitCommon, kind: z.literal(k), shard: z.null(), fromSeq: z.null(), toSeq: z.null(), prepared: prepared.nullable() });
const unit = z.discriminatedUnion('kind', [
  z.object({ ...unitCommon, kind: z.literal('merge'), shard: z.string().min(1), fromSeq: count, toSeq: count, prepared: preparedMerge.nullable() }),
  periodicUnit('optimize', optimizePlan),
  periodicUnit('index', indexPlan),
  periodicUnit('gc', gcPlan),
]);

const observation = z.object({
  atMs: ms,
  version: count,
  rows: count,
  bytes: count,
  fragments: count,
  smallFragments: count,
  smallRows: count.optional(),
  unindexedRows: count,
  indices: count,
});
const periodicKind = z.enum(['optimize', 'index', 'gc']);
const tally = z.object({ decided: count, carriedOut: count });
const adoptedLog = z.object({
  sinceMs: ms,
  decisions: z.array(
    z.object({ atMs: ms, kind: periodicKind, why: z.string(), reason: z.string(), predictedBytes: count, version: count, fragments: count, carriedOut: z.boolean() }),
  ),
  totals: z.object({ optimize: tally, index: tally, gc: tally }),
  samples: z.array(z.object({ atMs: ms, version: count, fragments: count, smallFragments: count, rows: count, bytes: count, ours: z.literal(true).optional() })),
  outside: z.array(z.object({ atMs: ms, version: count, fragmentsBefore: count, fragmentsAfter: count })).optional(),
  outsideTotal: count.optional(),
});

const durations = z.object({ n: count, sumMs: z.number().nonnegative(), minMs: z.number().nonnegative(), maxMs: z.number().nonnegative() });
const perKindPartial = <T extends z.ZodTypeAny>(t: T) => z.object({ merge: t.optional(), optimize: t.optional(), index: t.optional(), gc: t.optional() });
const demandRecord = z.object({
  buckets: z
    .array(
      z.object({
        startMs: ms,
        endMs: ms,
        seals: count,
        sealedBytes: count,
        shards: z.array(z.string()).max(MAX_SHARDS_NAMED),
        prepare: perKindPartial(durations),
        preparedGenerations: count,
        idlePrepares: perKindPartial(count),
        commit: perKindPartial(durations),
        wait: perKindPartial(durations),
        backlogPeak: count.optional(),
        pressurePeak: z.number().min(0).max(1).optional(),
      }),
    )
    .max(MAX_BUCKETS),
});
const kindTotals = z.object({ units: count, bytesRead: count, bytesWritten: count, cpuMs: z.number().nonnegative() });
const unitHistory = z.object({
  sinceMs: ms,
  entries: z.array(
    z.object({
      unitId: z.string(),
      kind,
      shard: z.string().optional(),
      fromSeq: count.optional(),
      toSeq: count.optional(),
      startedAtMs: ms,
      readyAtMs: ms.optional(),
      grantedAtMs: ms.optional(),
      endedAtMs: ms,
      outcome: z.enum(['committed', 'nothing to do', 'failed', 'stalled', 'no headroom', 'shadow']),
      why: z.string(),
      error: z.string().optional(),
      rows: count,
      bytesRead: count,
      bytesWritten: count,
      cpuMs: z.number().nonnegative(),
      reservedBytes: count,
      riders: z.array(z.string()).optional(),
    }),
  ),
  totals: perKind(kindTotals),
  sealedBytes: count,
});

const schedClass = z.union([z.literal(1), z.literal(2), z.literal(3), z.literal(4)]);
const streak = z.object({ kind, count });
const mark = z.object({ planned: z.number().nullable(), done: z.number().nullable() });

const state = z
  .object({
    table: z.string().min(1),
    // Empty for an adopted table without a declared key.
    key: z.string(),
    policy: carriedPolicy,
    shards: z.array(shard),
    units: z.array(unit),
    turn: z.object({ unitId: z.string(), kind, sinceMs: ms, why: z.string(), riders: z.array(z.string()).optional(), streakBefore: streak.nullable() }).nullable(),
    streak: streak.nullable(),
    paused: z.boolean(),
    pausedKinds: z.array(kind),
    bumps: z.array(z.object({ target: z.union([z.object({ kind }), z.object({ unitId: z.string() })]), class: schedClass, reason: z.string(), expiresAtMs: ms })),
    counters: z.object({
      turns: perKind(count),
      stalls: count,
      retries: count,
      maxTurnWaitSecs: perKind(z.number().nonnegative()),
      merges: count,
      rowsMerged: count,
      rejectedSignals: count.optional(),
      headroomWaits: count.optional(),
      commitConflicts: count.optional(),
    }),
    version: count,
    dueAtMs: z.object({ optimize: ms, index: ms, gc: ms, snapshot: ms }),
    snapshotInFlight: z.boolean(),
    writePressure: z.number().min(0).max(1),
    pullInAtMs: ms.optional(),
    pullInGrantMs: ms.optional(),
    // Default: short, as the period after activity (the run before may have just seen some).
    snapshotEverySecs: z.number().positive().optional(),
    activityAtMs: ms.optional(),
    noIndices: z.boolean().optional(),
    lastCommitMs: z.object({ optimize: count.optional(), index: count.optional(), gc: count.optional() }).optional(),
    // Default: every periodic kind runs once more when its period is up (what changed since its last run is unknown).
    periodic: z.object({ optimize: mark, index: mark, gc: mark }).default(() => marks(null)),
    adopted: z.object({ uri: z.string().min(1), mode: z.enum(['shadow', 'active']), observed: observation.nullable() }).optional(),
  })
  .transform((s) => ({ ...s, snapshotEverySecs: s.snapshotEverySecs ?? s.policy.snapshotIntervalSecs }));

export const carriedSchema = z.object({
  formatVersion: z.number().int().min(1).default(1),
  state,
  stalled: z.array(z.string()).default([]),
  rates: z.array(z.object({ atMs: ms, sealed: count, merged: count })).default([]),
  grants: z.array(z.object({ atMs: ms, unitId: z.string(), kind, why: z.string(), waitedSecs: z.number().nonnegative(), riders: z.array(z.string()).optional() })).default([]),
  adoptedLog: adoptedLog.optional(),
  history: unitHistory.optional(),
  demand: demandRecord.optional(),
}) satisfies z.ZodType<Carried, z.ZodTypeDef, unknown>;

export type CarriedResult = { ok: true; carried: Carried } | { ok: false; error: string };

/** A carried state as this release works with it, defaults filled in; or why it cannot be read. Never throws. */
export function parseCarried(raw: unknown): CarriedResult {
  const r = carriedSchema.safeParse(raw);
  return r.success ? { ok: true, carried: r.data } : { ok: false, error: `carried state: ${formatZodError(r.error)}` };
}
