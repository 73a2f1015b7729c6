import { blockedByOperator, classWhy, isEligible, limitedStreak, pickTurn, sortForTurn, waitedMs } from './order';
import { formatBytes } from '../config/bytes';
import { backlogOf } from './pressure';
import { fmtSecs, plural } from './time';
import type { Adopted, Counters, Kind, Phase, SchedClass, TableState, Unit } from './types';
import { preparingCount, wantedUnits } from './units';

// The object `turnstile status --json` prints (README), including why every
// waiting unit waits. Derived from the state only; never stored.

export interface QueueEntry {
  unitId: string;
  kind: Kind;
  class: SchedClass;
  waitedSecs: number;
  reason: string;
}

export interface PreparingEntry {
  unitId: string;
  kind: Kind;
  reservedBytes: number;
  phase: Phase | null;
  /** The last heartbeat's details, e.g. {phase: 'read', filesRead, rowsRead}. */
  progress?: Record<string, unknown> | null;
  attempt?: number;
  /** Seconds since the last heartbeat reached the server (null: none yet). */
  heartbeatAgeSecs?: number | null;
  /** The worker running it (from describe); reservedBytes then is its reservation there (the fleet registry). */
  worker?: string;
  /** In the task queue, taken by no worker yet: no worker has the headroom for a unit. */
  queued?: boolean;
  /** With `queued`: the headroom a worker needs to take it (a poll claim, the largest unit). */
  waitingForBytes?: number;
}

export interface StatusView {
  table: string;
  version: number;
  paused: boolean;
  pausedKinds: Kind[];
  writePressure: number;
  backlog: number;
  shards: { shard: string; sealedThroughSeq: number; mergedThroughSeq: number; heldReason: string | null }[];
  turn: { unitId: string; kind: Kind; sinceSecs: number; why: string; riders?: string[] } | null;
  /**
   * phase (and progress, attempt) come from the preparation's last heartbeat, which the
   * workflow never sees: the client fills them in from describe() (see table-client.ts).
   */
  preparing: PreparingEntry[];
  queue: QueueEntry[];
  counters: Counters;
  /** The generation-store scan: its current period (see idle.ts) and when the next one starts. */
  snapshot: { everySecs: number; running: boolean; nextInSecs: number | null };
  /** Adopted tables only: where the table is, the mode, and the latest look at it. */
  adopted?: Adopted;
}

/** "waiting for 380 MiB of headroom": what status, the UI details and the README say. */
export const headroomLine = (bytes: number): string => `waiting for ${formatBytes(bytes)} of headroom`;

function queuedReasons(state: TableState, nowMs: number): QueueEntry[] {
  const waiting = state.units.filter((u) => u.state === 'ready' || u.state === 'backoff');
  const eligible = sortForTurn(state, waiting.filter((u) => isEligible(state, u)), nowMs);
  const queued = [...eligible, ...sortForTurn(state, waiting.filter((u) => !isEligible(state, u)), nowMs)];
  const limited = limitedStreak(state, eligible);
  const next = pickTurn(state, nowMs)?.unit ?? null;
  const nextCls = next ? classWhy(state, next, nowMs).cls : null;

  const reasonOf = (u: Unit, cls: SchedClass): string => {
    const blocked = blockedByOperator(state, u);
    if (blocked !== null) return blocked;
    if (u.state === 'backoff' && u.waitingForBytes !== undefined) {
      const left = Math.max(0, (u.notBeforeMs ?? nowMs) - nowMs);
      return `${headroomLine(u.waitingForBytes)}: no worker took its commit within ${state.policy.commitAdmissionWaitSecs ?? 0} s (${plural(u.headroomWaits ?? 1, 'time')}), the turn is free; again at +${fmtSecs(left)} s`;
    }
    if (u.state === 'backoff') {
      const left = Math.max(0, (u.notBeforeMs ?? nowMs) - nowMs);
      return `commit retry backoff until +${fmtSecs(left)} s (attempt ${u.commitAttempts + 1}: ${u.lastError ?? 'unknown error'})`;
    }
    if (limited && u.kind === limited.kind) return `limited: ${limited.kind} took ${plural(limited.count, 'turn')} in a row`;
    if (next === null || u.id === next.id) {
      return state.turn ? `next in line (class ${cls}), after ${state.turn.unitId}` : `next in line (class ${cls})`;
    }
    return `waiting for the turn behind ${next.id} (class ${nextCls})`;
  };

  return queued.map((u) => {
    const cls = classWhy(state, u, nowMs).cls;
    return { unitId: u.id, kind: u.kind, class: cls, waitedSecs: waitedMs(u, nowMs) / 1000, reason: reasonOf(u, cls) };
  });
}

/** Work that should have a unit but has none yet: held or paused shards, full preparation slots. */
function blockedCreations(state: TableState, nowMs: number): QueueEntry[] {
  const p = state.policy;
  const backlog = backlogOf(state);
  return wantedUnits(state, nowMs).map((w) => {
    const cls: SchedClass = w.kind === 'merge' && backlog > p.softBacklog ? 1 : p.classes[w.kind];
    const reason =
      blockedByOperator(state, w) ??
      `waiting for a preparation slot (${preparingCount(state)}/${p.maxConcurrentPreparations} preparing)`;
    const waitedSecs = w.dueSinceMs === null ? 0 : Math.max(0, nowMs - w.dueSinceMs) / 1000;
    return { unitId: w.id, kind: w.kind, class: cls, waitedSecs, reason };
  });
}

export function statusView(state: TableState, nowMs: number): StatusView {
  const c = state.counters;
  return {
    table: state.table,
    version: state.version,
    paused: state.paused,
    pausedKinds: [...state.pausedKinds],
    writePressure: state.writePressure,
    backlog: backlogOf(state),
    shards: state.shards.map((s) => ({
      shard: s.shard,
      sealedThroughSeq: s.sealedThroughSeq,
      mergedThroughSeq: s.mergedThroughSeq,
      heldReason: s.heldReason,
    })),
    turn: state.turn
      ? {
          unitId: state.turn.unitId,
          kind: state.turn.kind,
          sinceSecs: Math.max(0, nowMs - state.turn.sinceMs) / 1000,
          why: state.turn.why,
          ...(state.turn.riders ? { riders: [...state.turn.riders] } : {}),
        }
      : null,
    preparing: state.units
      .filter((u) => u.state === 'preparing')
      .map((u) => ({ unitId: u.id, kind: u.kind, reservedBytes: u.reservedBytes, phase: null })),
    queue: [...queuedReasons(state, nowMs), ...blockedCreations(state, nowMs)],
    // An adopted table's lost races count from 0 (the state keeps the counter only once one happened).
    counters: { ...c, turns: { ...c.turns }, maxTurnWaitSecs: { ...c.maxTurnWaitSecs }, rejectedSignals: c.rejectedSignals ?? 0, ...(state.adopted ? { commitConflicts: c.commitConflicts ?? 0 } : {}) },
    snapshot: {
      everySecs: state.snapshotEverySecs,
      running: state.snapshotInFlight,
      nextInSecs: state.snapshotInFlight ? null : Math.max(0, state.dueAtMs.snapshot - nowMs) / 1000,
    },
    ...(state.adopted ? { adopted: { ...state.adopted } } : {}),
  };
}
