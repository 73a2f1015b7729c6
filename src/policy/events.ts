import { foldCommitObservation, foldObservation, onModeChanged } from './adopted';
import { clonePolicy } from './clone';
import { advanceMerged, foldDemand, foldSnapshot, shardOf } from './fold';
import { forceRun, hasChanged, markDone, scheduleNextSnapshot, snapshotSoon, spreadAfterQuiet } from './idle';
import { isPeriodic, mergeUnitsOf, PERIODIC_KINDS } from './units';
import { isMergeHead } from './order';
import { nextDueMs, NEVER } from './time';
import { isRidingKind, recordCommitMs, stopRiding, type RidingKind } from './rides';
import type { Bump, Kind, MaintainedRun, PolicyEvent, StoreScan, TableState, Unit } from './types';

// Applies one event to a (copied) state. Time-driven rules (backoffs ending,
// promotion, creating units, granting the turn) are left to evaluate().

type Ev<T extends PolicyEvent['type']> = Extract<PolicyEvent, { type: T }>;

const findUnit = (state: TableState, id: string): Unit | undefined => state.units.find((u) => u.id === id);

const removeUnit = (state: TableState, id: string): void => {
  state.units = state.units.filter((u) => u.id !== id);
};

/** The turn holder with this id; results for anything else are late duplicates. */
function holder(state: TableState, id: string): Unit | undefined {
  if (state.turn?.unitId !== id) return undefined;
  const u = findUnit(state, id);
  return u?.state === 'committing' ? u : undefined;
}

/** A unit is done (committed, or nothing to commit): record it and let the next one come. */
function finish(state: TableState, u: Unit, nowMs: number, rows: number, prevVersion: number): void {
  removeUnit(state, u.id);
  if (u.kind === 'merge') {
    if (u.shard !== null && u.toSeq !== null) advanceMerged(state, u.shard, u.toSeq);
    state.counters.merges++;
    state.counters.rowsMerged += rows;
    // A follower that had nothing to commit was only waiting for this.
    const next = u.shard === null ? undefined : mergeUnitsOf(state, u.shard)[0];
    if (next?.emptyPrepared && isMergeHead(state, next)) finish(state, next, nowMs, 0, prevVersion);
  } else if (isPeriodic(u.kind)) {
    state.dueAtMs[u.kind] = nextDueMs(nowMs, state.policy.periodSecs[u.kind]);
    markDone(state, u.kind, prevVersion);
  }
}

/** A unit failed for good: a merge holds its shard (visible in status), others wait a period. */
function giveUp(state: TableState, u: Unit, nowMs: number, error: string): void {
  removeUnit(state, u.id);
  if (u.kind === 'merge' && u.shard !== null) {
    shardOf(state, u.shard).heldReason = error;
    // Its follower could never commit before it: after a resume one new unit covers both.
    for (const f of mergeUnitsOf(state, u.shard)) if (f.state !== 'committing') removeUnit(state, f.id);
  }
  else if (isPeriodic(u.kind)) state.dueAtMs[u.kind] = nextDueMs(nowMs, state.policy.periodSecs[u.kind]);
}

function onPrepared(state: TableState, e: Ev<'prepared'>, nowMs: number): void {
  const u = findUnit(state, e.unitId);
  if (e.scan) onScan(state, e.scan, nowMs, u?.state === 'preparing' ? u.createdAtMs : -Infinity);
  if (u?.state !== 'preparing') return;
  // A merge preparation may cover only the start of its range (a batch bounded by the
  // fleet's memory): the rest stays backlog, for a follower or the next unit.
  // Or more than its range: what was sealed between the decision and its start
  // (activities/prepare-merge.ts). No unit of the shard starts after one still preparing
  // (a follower waits for its head to be prepared), so nothing overlaps; and only up to
  // what the table knows is sealed (the scan above), so the backlog never goes negative.
  if (u.kind === 'merge' && e.kind === 'merge' && e.prepared && u.shard !== null && e.prepared.toSeq >= u.fromSeq) {
    const grows = e.prepared.toSeq > u.toSeq && e.prepared.toSeq <= shardOf(state, u.shard).sealedThroughSeq;
    if (e.prepared.toSeq < u.toSeq || grows) u.toSeq = e.prepared.toSeq;
  }
  if (e.scan) u.scanned = true;
  if (e.kind === 'index' && e.prepared?.configured !== undefined) state.noIndices = e.prepared.configured === 0;
  state.counters.retries += Math.max(0, e.attempts - 1);
  if (e.reservedBytes !== undefined) u.reservedBytes = e.reservedBytes;
  if (!e.needsCommit) {
    if (isMergeHead(state, u)) return finish(state, u, nowMs, 0, state.version);
    // A follower must not mark its range merged before its head's: it waits for it.
    u.state = 'ready';
    u.emptyPrepared = true;
    return;
  }
  u.state = 'ready';
  u.readySinceMs ??= nowMs;
  keepPrepared(u, e);
}

/** A result goes to the unit of its own kind (a unit id names one kind, so they always match). */
function keepPrepared(u: Unit, e: Ev<'prepared'>): void {
  if (u.kind === 'merge' && e.kind === 'merge') u.prepared = e.prepared ?? null;
  else if (u.kind === 'optimize' && e.kind === 'optimize') u.prepared = e.prepared ?? null;
  else if (u.kind === 'index' && e.kind === 'index') u.prepared = e.prepared ?? null;
  else if (u.kind === 'gc' && e.kind === 'gc') u.prepared = e.prepared ?? null;
}

function onPrepareFailed(state: TableState, e: Ev<'prepareFailed'>, nowMs: number): void {
  const u = findUnit(state, e.unitId);
  if (u?.state !== 'preparing') return;
  if (e.stalled) state.counters.stalls++;
  if (e.retryable) {
    // Dropped, and recreated by evaluate() with the range as it is now.
    state.counters.retries++;
    removeUnit(state, u.id);
    return;
  }
  giveUp(state, u, nowMs, e.error);
}

/** The units that rode in the holder's turn (see evaluate.ts), still committing. */
function ridersOf(state: TableState): Unit[] {
  const ids = state.turn?.riders ?? [];
  return state.units.filter((u) => ids.includes(u.id) && u.state === 'committing');
}

function onCommitted(state: TableState, e: Ev<'committed'>, nowMs: number): void {
  const u = holder(state, e.unitId);
  if (!u) return;
  const quiet = PERIODIC_KINDS.filter((k) => !hasChanged(state, k));
  // Folded first: the commit began at the grant, and its scan came after that.
  if (e.scan) onScan(state, e.scan, nowMs, state.turn?.sinceMs ?? -Infinity);
  const riders = ridersOf(state);
  const grantedAtMs = state.turn?.sinceMs ?? nowMs;
  state.turn = null;
  state.counters.turns[u.kind]++;
  state.counters.retries += Math.max(0, e.attempts - 1);
  addConflicts(state, e.conflicts);
  foldCommitObservation(state, e.observation);
  const prevVersion = state.version;
  state.version = Math.max(state.version, e.version);
  recordCommitMs(state, u.kind, nowMs - grantedAtMs);
  finish(state, u, nowMs, e.rows ?? 0, prevVersion);
  // A table that wanted no index plans again: it wants one on its key now.
  if (e.keyIndexMissing === true && state.noIndices === true) state.noIndices = false;
  for (const r of riders) {
    const kind = r.kind;
    if (r.rider && isRidingKind(kind)) endRide(state, r, kind, e.maintained?.[kind], nowMs, prevVersion);
    else finish(state, r, nowMs, 0, prevVersion);
  }
  spreadAfterQuiet(state, quiet, nowMs);
  // A merge is activity: a writer is about, so a lost signal is looked for soon, unless
  // its preparation's or its commit's scan already looked, after the demand that made it.
  if (u.kind === 'merge' && !u.scanned && !e.scan) snapshotSoon(state, nowMs);
}

/** A maintenance rider's end: done as a unit of its own would be, or failed for this period and on its own next time. */
function endRide(state: TableState, r: Unit, kind: RidingKind, run: MaintainedRun | undefined, nowMs: number, prevVersion: number): void {
  if (run !== undefined && run.error === undefined) {
    recordCommitMs(state, kind, run.ms);
    return finish(state, r, nowMs, run.rows, prevVersion);
  }
  stopRiding(state, kind);
  giveUp(state, r, nowMs, run?.error ?? 'did not run');
}

/** The holder's commit did not go through: its maintenance riders are dropped (they ride the retry, or run on their own). */
function dropMaintenanceRiders(state: TableState, riders: Unit[]): Unit[] {
  for (const r of riders) if (r.rider) removeUnit(state, r.id);
  return riders.filter((r) => !r.rider);
}

function addConflicts(state: TableState, n: number | undefined): void {
  if (n) state.counters.commitConflicts = (state.counters.commitConflicts ?? 0) + n;
}

function backOff(state: TableState, u: Unit, nowMs: number, error: string): void {
  const p = state.policy;
  u.lastError = error;
  u.commitAttempts++;
  u.state = 'backoff';
  // A commit that was taken and failed found headroom: its next wait for memory starts afresh.
  delete u.waitingForBytes;
  delete u.headroomWaits;
  // readySinceMs is kept: the wait that counts towards promotion goes on.
  const secs = Math.min(p.commitRetryBaseSecs * 2 ** (u.commitAttempts - 1), p.commitRetryMaxSecs);
  u.notBeforeMs = nowMs + secs * 1000;
}

/**
 * No worker had the headroom to take the holder's commit. It never started,
 * so the turn goes back at once (another unit, maybe smaller, may take it) and the
 * unit, with its riders, waits on a durable timer, doubling with every wait in a row,
 * before it may take the turn again. Not a failure: commitAttempts is unchanged.
 */
function onNoHeadroom(state: TableState, e: Ev<'noHeadroom'>, nowMs: number): void {
  const u = holder(state, e.unitId);
  if (!u) return;
  const riders = dropMaintenanceRiders(state, ridersOf(state));
  state.turn = null;
  state.counters.headroomWaits = (state.counters.headroomWaits ?? 0) + 1;
  const base = state.policy.commitAdmissionWaitSecs ?? 0;
  for (const x of [u, ...riders]) {
    x.headroomWaits = (x.headroomWaits ?? 0) + 1;
    x.waitingForBytes = e.bytes;
    x.state = 'backoff';
    const secs = Math.min(base * 2 ** (x.headroomWaits - 1), Math.max(base, state.policy.commitRetryMaxSecs));
    x.notBeforeMs = nowMs + secs * 1000;
  }
}

function onCommitFailed(state: TableState, e: Ev<'commitFailed'>, nowMs: number): void {
  const u = holder(state, e.unitId);
  if (!u) return;
  const riders = dropMaintenanceRiders(state, ridersOf(state));
  state.turn = null;
  addConflicts(state, e.conflicts);
  if (e.stalled) state.counters.stalls++;
  state.counters.retries++;
  if (e.retryable) {
    for (const x of [u, ...riders]) backOff(state, x, nowMs, e.error);
    return;
  }
  if (riders.length === 0) {
    u.lastError = e.error;
    return giveUp(state, u, nowMs, e.error);
  }
  // Which batch of the group was bad is not known: each unit commits alone next, so
  // the bad one is held by itself and the others go on.
  for (const x of [u, ...riders]) {
    x.lastError = e.error;
    x.solo = true;
    x.state = 'ready';
  }
}

const sameTarget = (a: Bump['target'], b: Bump['target']): boolean =>
  'kind' in a ? 'kind' in b && a.kind === b.kind : 'unitId' in b && a.unitId === b.unitId;

function onBump(state: TableState, bump: Bump, nowMs: number): void {
  const b: Bump = { ...bump, target: { ...bump.target } };
  state.bumps = state.bumps.filter((x) => !sameTarget(x.target, b.target));
  if (b.expiresAtMs > nowMs) state.bumps.push(b);
  // Bumping optimize/index/gc also makes it due now: that is how an operator asks for
  // one right away. Due (not "create while bumped") so that it runs once, not in a loop.
  const kind = 'kind' in b.target ? b.target.kind : b.target.unitId;
  if (isPeriodic(kind)) {
    state.dueAtMs[kind] = Math.min(state.dueAtMs[kind], nowMs);
    forceRun(state, kind);
  }
}

function onPause(state: TableState, kind: Kind | null): void {
  if (kind === null) state.paused = true;
  else if (!state.pausedKinds.includes(kind)) state.pausedKinds = [...state.pausedKinds, kind].sort();
}

/** Resuming the table resumes everything; resuming the table or merge also acknowledges held shards. */
function onResume(state: TableState, kind: Kind | null): void {
  if (kind === null) {
    state.paused = false;
    state.pausedKinds = [];
  } else {
    state.pausedKinds = state.pausedKinds.filter((k) => k !== kind);
  }
  if (kind === null || kind === 'merge') for (const s of state.shards) s.heldReason = null;
}

function onPolicyChanged(state: TableState, e: Ev<'policyChanged'>, nowMs: number): void {
  const old = state.policy;
  state.policy = clonePolicy(e.policy);
  // A changed period takes effect now, not after the old (possibly "never") due time.
  for (const k of PERIODIC_KINDS) {
    const secs = state.policy.periodSecs[k];
    if (secs === old.periodSecs[k]) continue;
    state.dueAtMs[k] = secs > 0 ? Math.min(state.dueAtMs[k], nowMs + secs * 1000) : state.dueAtMs[k] <= nowMs ? state.dueAtMs[k] : NEVER;
  }
}

/** Whether a snapshot moved any watermark or brought a shard we did not know. */
function sameWatermarks(a: TableState['shards'], b: TableState['shards']): boolean {
  return a.length === b.length && a.every((s, i) => b[i]!.shard === s.shard && b[i]!.sealedThroughSeq === s.sealedThroughSeq);
}

function onSnapshot(state: TableState, e: Ev<'snapshot'>, nowMs: number): void {
  const before = state.shards.map((s) => ({ ...s }));
  foldSnapshot(state, e.shards);
  state.snapshotInFlight = false;
  scheduleNextSnapshot(state, nowMs, !sameWatermarks(before, state.shards));
}

/**
 * A scan that rode on a merge's preparation or commit (`sinceMs`: when that activity was
 * decided): the same scan a snapshot makes, so it counts as one and the next snapshot
 * moves out; a table that merges steadily then runs no snapshot activity (and no
 * workflow tasks for one). It counts as quiet only if nothing happened after the
 * preparation began (it may have read the store before that); otherwise it can only
 * bring the next snapshot closer. While a snapshot activity runs, its own end reschedules.
 */
function onScan(state: TableState, scan: StoreScan, nowMs: number, sinceMs: number): void {
  const before = state.shards.map((s) => ({ ...s }));
  foldSnapshot(state, scan.shards);
  if (state.snapshotInFlight) return;
  const foundNew = !sameWatermarks(before, state.shards);
  // Something after the preparation began, which the scan may not have seen: it can
  // bring the next snapshot closer (it found something), never push it out.
  if ((state.activityAtMs ?? -Infinity) > sinceMs) return foundNew ? snapshotSoon(state, nowMs) : undefined;
  scheduleNextSnapshot(state, nowMs, foundNew);
}

/** Operator actions (bump, pause, resume, policy) count as activity for the snapshot period. */
function operator(state: TableState, nowMs: number, apply: () => void): void {
  apply();
  snapshotSoon(state, nowMs);
}

export function applyEvent(state: TableState, e: PolicyEvent, nowMs: number): void {
  switch (e.type) {
    case 'demand':
      // A demand the table already knew (a redelivery, the store sweep telling a quiet
      // shard) announces no seal: the scans that look for lost signals keep their period.
      if (!foldDemand(state, e.shard, e.sealedThroughSeq, e.revision, e.bytes)) return;
      return snapshotSoon(state, nowMs);
    case 'snapshot':
      return onSnapshot(state, e, nowMs);
    case 'snapshotFailed':
      state.snapshotInFlight = false;
      return scheduleNextSnapshot(state, nowMs, null);
    case 'prepared':
      return onPrepared(state, e, nowMs);
    case 'prepareFailed':
      return onPrepareFailed(state, e, nowMs);
    case 'committed':
      return onCommitted(state, e, nowMs);
    case 'commitFailed':
      return onCommitFailed(state, e, nowMs);
    case 'noHeadroom':
      return onNoHeadroom(state, e, nowMs);
    case 'timer':
      return;
    case 'bump':
      return operator(state, nowMs, () => onBump(state, e.bump, nowMs));
    case 'pause':
      return operator(state, nowMs, () => onPause(state, e.kind));
    case 'resume':
      return operator(state, nowMs, () => onResume(state, e.kind));
    case 'policyChanged':
      return operator(state, nowMs, () => onPolicyChanged(state, e, nowMs));
    case 'observed':
      state.snapshotInFlight = false;
      return scheduleNextSnapshot(state, nowMs, foldObservation(state, e.observation, nowMs));
    case 'observeFailed':
      state.snapshotInFlight = false;
      return scheduleNextSnapshot(state, nowMs, null);
    case 'modeChanged':
      return operator(state, nowMs, () => onModeChanged(state, e.mode));
  }
}
