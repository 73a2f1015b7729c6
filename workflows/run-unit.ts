import { TimeoutType } from '@temporalio/common';
import { ActivityFailure, ApplicationFailure, proxyActivities, TimeoutFailure } from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { CommitResult, MaintainInput, PreparedMerge, UnitCost } from '../activities/contract';
import type { PolicyEvent, TableState, Unit } from '../src/policy/types';
import { commitReservation, FIXED_RESERVATIONS, ridersReservation } from '../src/worker/reservation-sizes';

// Carries out the core's `prepare` and `commit` decisions: picks the activity of the
// unit's kind, sets its timeouts from the policy, and turns its outcome back into an
// event for the core. Preparation retries (stalls included) are Temporal's; a commit is
// one attempt per granted turn, so a stalled commit releases the turn and the core
// decides when it goes again.

type Activities = ReturnType<typeof createActivities>;

const secs = (n: number) => `${n} s`;

/**
 * Activity ids name the unit ("prepare merge/s0 1-3"), so the Temporal UI's pending
 * activities and `status` (which reads their heartbeat details through describe) can
 * tell which unit an activity works for. Unique among pending activities: a unit has at
 * most one preparation and one commit in flight.
 */
export function activityIdFor(step: 'prepare' | 'commit', unit: Unit): string {
  const range = unit.kind === 'merge' ? ` ${unit.fromSeq}-${unit.toSeq}` : '';
  return `${step} ${unit.id}${range}`;
}

/**
 * Activity task queue priorities (lower goes first; unset is the server's default 3):
 * a commit holds its table's turn, a merge preparation is on the way from seal to merged.
 */
const COMMIT_PRIORITY = 1;
const MERGE_PREPARATION_PRIORITY = 2;

/**
 * A merge's preparation is on the way from seal to merged; optimize's, index's and gc's
 * plans and the snapshots are not: ahead of them in the activity queue (priority 2; the
 * default is 3, commits are 1). A table that fell behind merges its backlog through
 * preparations, and behind the fleet's periodic work they waited p50 206 s (1,000
 * tables on 2 cores, bench/README.md): the backlog only grew.
 */
const mergePreparationPriority = (unit: Unit): { priority?: { priorityKey: number } } =>
  unit.kind === 'merge' ? { priority: { priorityKey: MERGE_PREPARATION_PRIORITY } } : {};

/**
 * The plans of optimize, index and gc go at the default priority, behind merge
 * preparations and commits. A fleet that cannot keep up always has one of those queued,
 * and the server hands out the lowest priority key first, so a plan could wait forever.
 * One that no worker took within its kind's maxTurnWaitSecs (the bound on a commit-ready
 * unit's wait, invariant 4) is asked for again at the merge preparations' priority, where
 * tasks go in the order they came (prepareUnit).
 */
function planQueueing(st: TableState, unit: Unit, aged: boolean): { scheduleToStartTimeout?: string; priority?: { priorityKey: number } } {
  if (unit.kind === 'merge') return mergePreparationPriority(unit);
  return aged ? { priority: { priorityKey: MERGE_PREPARATION_PRIORITY } } : { scheduleToStartTimeout: secs(st.policy.maxTurnWaitSecs[unit.kind]) };
}

/** Runs `call` on the proxies of `proxies(false)`; when no worker took it in time, again on the aged ones. */
async function withAging<T>(proxies: (aged: boolean) => Activities, call: (acts: Activities) => Promise<T>): Promise<T> {
  try {
    return await call(proxies(false));
  } catch (err) {
    if (!notTaken(err)) throw err;
    return call(proxies(true));
  }
}

/** Runs a plan activity; one no worker took in time goes again, aged (planQueueing). */
export const planAging = <T>(st: TableState, unit: Unit, call: (acts: Activities) => Promise<T>): Promise<T> => withAging((aged) => prepActivities(st, unit, aged), call);

/** `aged`: a plan asked for again after no worker took it in time (planQueueing). */
export function prepActivities(st: TableState, unit: Unit, aged = false): Activities {
  return proxyActivities<Activities>({
    activityId: activityIdFor('prepare', unit),
    ...planQueueing(st, unit, aged),
    startToCloseTimeout: '1 hour',
    heartbeatTimeout: secs(Math.max(st.policy.stallSecs.read, st.policy.stallSecs.encode)),
    retry: { initialInterval: '1 s', backoffCoefficient: 2, maximumInterval: '30 s', maximumAttempts: 8 },
  });
}

/**
 * A commit no worker takes within commitAdmissionWaitSecs (no worker has the memory
 * headroom to poll) times out before it starts, and the shell hands the turn back (the
 * core's noHeadroom event).
 */
function admissionWait(st: TableState): { scheduleToStartTimeout?: string; priority?: { priorityKey: number } } {
  const secs = st.policy.commitAdmissionWaitSecs ?? 0;
  if (secs <= 0) return {};
  // Highest priority (default 3): without it a commit queued behind a backlog of
  // preparations and scans on a merely busy fleet (measured: 1,000 tables on 2 cores,
  // queue p50 27 s) timed out as if no worker had headroom, gave its turn back, and
  // queued again at the back: 516 commits in 10 minutes instead of ~3,600.
  return { scheduleToStartTimeout: `${secs} s`, priority: { priorityKey: COMMIT_PRIORITY } };
}

/** What the commit reserves of a worker's budget (src/worker/reservation-sizes.ts), for "waiting for N MiB of headroom". */
export function commitBytes(unit: Unit, riders: Unit[] = []): number {
  switch (unit.kind) {
    case 'merge':
      return commitReservation([unit, ...riders].reduce((n, u) => n + (u.kind === 'merge' ? (u.prepared?.bytes ?? 0) : 0), 0)) + ridersReservation(riders.filter((r) => r.rider).map((r) => r.kind));
    case 'optimize':
      return FIXED_RESERVATIONS.commitOptimize!;
    case 'index':
      return FIXED_RESERVATIONS.ensureIndex!;
    case 'gc':
      return FIXED_RESERVATIONS.gc!;
  }
}

/** The commit was never started: no worker took it from the task queue in time. */
export function notTaken(err: unknown): boolean {
  return err instanceof ActivityFailure && err.cause instanceof TimeoutFailure && err.cause.timeoutType === TimeoutType.SCHEDULE_TO_START;
}

export function commitActivities(st: TableState, unit: Unit, summary: string): Activities {
  return proxyActivities<Activities>({
    activityId: activityIdFor('commit', unit),
    ...admissionWait(st),
    startToCloseTimeout: '2 hours',
    heartbeatTimeout: secs(st.policy.stallSecs.commit),
    retry: { maximumAttempts: 1 },
    summary,
  });
}

// A snapshot (or an adopted table's observation) is a quick scan with no progress to
// report: a worker that dies holding one is noticed by startToCloseTimeout, so it is
// kept short. Not a local activity: on replay the SDK may hand a local activity's
// result over in the same activation as events that came in a later workflow task, and
// the shell decides once per activation, so decisions would differ from the recorded
// ones (a full replay on another worker failed with nondeterminism; bench/README.md).
// It goes at the default priority and ages as a plan does (planQueueing): a scan feeds
// the merges' watermarks, so its bound is merge's maxTurnWaitSecs.
function scanActivities(st: TableState, aged: boolean): Activities {
  return proxyActivities<Activities>({
    ...(aged ? { priority: { priorityKey: MERGE_PREPARATION_PRIORITY } } : { scheduleToStartTimeout: secs(st.policy.maxTurnWaitSecs.merge) }),
    startToCloseTimeout: '1 minute',
    retry: { initialInterval: '1 s', maximumInterval: '30 s', maximumAttempts: 5 },
  });
}

/** Runs a scan activity; one no worker took in time goes again, aged. */
export const scanAging = <T>(st: TableState, call: (acts: Activities) => Promise<T>): Promise<T> => withAging((aged) => scanActivities(st, aged), call);

/** The cost an activity reported, for the table's unit history; absent from results of workers that do not measure it. */
export const costed = (cost: UnitCost | undefined): { cost?: UnitCost } => (cost ? { cost } : {});

/** What went wrong, whether retrying can help, and whether it was a stall. */
export function classify(err: unknown): { error: string; retryable: boolean; stalled: boolean } {
  let cause: unknown = err;
  if (err instanceof ActivityFailure) cause = err.cause ?? err;
  if (cause instanceof TimeoutFailure) {
    const stalled = cause.timeoutType === TimeoutType.HEARTBEAT;
    return { error: stalled ? `stalled: no progress (last: ${JSON.stringify(cause.lastHeartbeatDetails ?? null)})` : cause.message, retryable: true, stalled };
  }
  if (cause instanceof ApplicationFailure) return { error: cause.message, retryable: !cause.nonRetryable, stalled: false };
  return { error: cause instanceof Error ? cause.message : String(cause), retryable: true, stalled: false };
}

export async function prepareUnit(st: TableState, unit: Unit): Promise<PolicyEvent> {
  const table = st.table;
  const plan = <T>(call: (acts: Activities) => Promise<T>): Promise<T> => planAging(st, unit, call);
  try {
    switch (unit.kind) {
      case 'merge': {
        // The scan is not kept with the unit: it is folded into the watermarks at once.
        const { scan, cost, ...p } = await prepActivities(st, unit).prepareMerge({ table, key: st.key, shard: unit.shard, fromSeq: unit.fromSeq, toSeq: unit.toSeq });
        return { type: 'prepared', kind: 'merge', unitId: unit.id, needsCommit: true, prepared: p, reservedBytes: p.bytes, attempts: p.attempt, ...(scan ? { scan } : {}), ...costed(cost) };
      }
      case 'optimize': {
        const { cost, ...p } = await plan((acts) => acts.planOptimize({ table }));
        return { type: 'prepared', kind: 'optimize', unitId: unit.id, needsCommit: p.needed, prepared: p, attempts: 1, ...costed(cost) };
      }
      case 'index': {
        const { cost, ...p } = await plan((acts) => acts.planIndex({ table }));
        return { type: 'prepared', kind: 'index', unitId: unit.id, needsCommit: p.missing.length > 0, prepared: p, attempts: 1, ...costed(cost) };
      }
      case 'gc': {
        const mergedThrough = st.shards.map((s) => ({ shard: s.shard, mergedThroughSeq: s.mergedThroughSeq }));
        const { cost, ...p } = await plan((acts) => acts.planGc({ table, mergedThrough }));
        return { type: 'prepared', kind: 'gc', unitId: unit.id, needsCommit: p.files.length + p.tempFiles.length > 0, prepared: p, attempts: 1, ...costed(cost) };
      }
    }
  } catch (err) {
    return { type: 'prepareFailed', unitId: unit.id, ...classify(err) };
  }
}

/** The one-line summary the Temporal UI shows for the commit: the unit and why it won. */
export function commitSummary(unit: Unit, why: string, riders: Unit[] = []): string {
  const range = unit.kind === 'merge' ? ` ${unit.shard} seq ${unit.fromSeq}-${unit.toSeq}` : '';
  const more = riders.length ? ` (with ${riders.map((r) => (r.kind === 'merge' ? `${r.shard} seq ${r.fromSeq}-${r.toSeq}` : r.kind)).join(', ')})` : '';
  return `${unit.kind}${range}${more}: ${why}`;
}

/** The optimize and gc riding a merge's turn (src/policy/rides.ts), as its commit activity takes them. */
function maintainInput(st: TableState, riders: Unit[]): MaintainInput {
  const m: MaintainInput = {};
  for (const r of riders) {
    if (!r.rider) continue;
    if (r.kind === 'optimize') m.optimize = { retentionSecs: st.policy.retentionSecs };
    if (r.kind === 'gc') m.gc = { mergedThrough: st.shards.map((s) => ({ shard: s.shard, mergedThroughSeq: s.mergedThroughSeq })) };
  }
  return m;
}

/** A merge is commit-ready only with its prepared batch (the core sets both at once). */
function preparedBatch(u: Unit): PreparedMerge {
  if (u.kind !== 'merge' || u.prepared === null) throw ApplicationFailure.nonRetryable(`${u.id}: no prepared batch to commit`, 'NotPrepared');
  return u.prepared;
}

export async function commitUnit(st: TableState, unit: Unit, why: string, riders: Unit[] = []): Promise<PolicyEvent> {
  const acts = commitActivities(st, unit, commitSummary(unit, why, riders));
  const table = st.table;
  try {
    let r: CommitResult;
    switch (unit.kind) {
      case 'merge': {
        const more = riders.filter((x) => !x.rider).map(preparedBatch);
        const maintain = maintainInput(st, riders);
        r = await acts.commitMerge({ table, key: st.key, prepared: preparedBatch(unit), ...(more.length ? { more } : {}), ...(Object.keys(maintain).length ? { maintain } : {}) });
        break;
      }
      case 'optimize':
        r = await acts.commitOptimize({ table, retentionSecs: st.policy.retentionSecs });
        break;
      case 'index':
        r = await acts.ensureIndex({ table });
        break;
      case 'gc': {
        const plan = unit.prepared;
        // Commit-ready only with files to delete, i.e. with its plan.
        if (plan === null) throw ApplicationFailure.nonRetryable(`${unit.id}: no gc plan to commit`, 'NotPrepared');
        const g = await acts.gc({ table, files: plan.files, tempFiles: plan.tempFiles });
        r = { version: st.version, rows: g.deleted, ...costed(g.cost) };
        break;
      }
    }
    return { type: 'committed', unitId: unit.id, version: r.version, rows: r.rows, attempts: 1, ...(r.scan ? { scan: r.scan } : {}), ...costed(r.cost), ...(r.maintained ? { maintained: r.maintained } : {}), ...(r.keyIndexMissing ? { keyIndexMissing: true } : {}) };
  } catch (err) {
    if (notTaken(err)) return { type: 'noHeadroom', unitId: unit.id, bytes: commitBytes(unit, riders) };
    return { type: 'commitFailed', unitId: unit.id, ...classify(err) };
  }
}

export async function runSnapshot(st: TableState): Promise<PolicyEvent> {
  const table = st.table;
  try {
    const s = await scanAging(st, (acts) => acts.snapshot({ table }));
    return { type: 'snapshot', revision: s.revision, shards: s.shards };
  } catch (err) {
    return { type: 'snapshotFailed', error: classify(err).error };
  }
}
