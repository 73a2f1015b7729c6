import { backlogOf } from './pressure';
import { recordDemand, type DemandEntry, type DemandRecord } from './demand-record';
import { addCosts, recordUnits, type UnitHistory, type UnitHistoryEntry, type UnitOutcome } from './unit-history';
import { isRidingKind, rideOutcome } from './rides';
import type { UnitCost } from './unit-results';
import type { Decision, Kind, PolicyEvent, TableState, Unit } from './types';

// Turns one activation of the table workflow (the events it delivered, the decisions the
// core made, the state before and after) into the table's demand record and unit
// history. The shell times nothing itself: a unit's preparation starts when the core
// decides `prepare` and ends with its `prepared` event, its turn starts with `commit` and
// ends with `committed`, `commitFailed` or `noHeadroom`, all at the activation's time.
// Pure.

/** A unit between its start and its end: what its history entry will say. */
export interface UnitRun {
  kind: Kind;
  startedAtMs: number;
  /** Cost of its preparation, not yet in any entry. */
  prepareCost?: UnitCost;
  grantedAtMs?: number;
  readyAtMs?: number;
  why?: string;
  riders?: string[];
  reservedBytes?: number;
  /** An adopted table's decision in shadow mode: recorded, not carried out. */
  shadow?: boolean;
  shard?: string;
  fromSeq?: number;
  toSeq?: number;
}

export interface Journal {
  /** Units started and not ended. Not carried across continue-as-new: the next run starts their work again. */
  running: Record<string, UnitRun>;
  history: UnitHistory;
  demand: DemandRecord;
}

export interface Activation {
  before: TableState;
  after: TableState;
  events: readonly PolicyEvent[];
  decisions: readonly Decision[];
  nowMs: number;
  /** What a commit reserves of a worker's memory (the shell knows the reservation sizes). */
  reservedBytes: (unit: Unit, riders: readonly Unit[]) => number;
}

const generations = (u: Unit | undefined): number => (u?.kind === 'merge' ? u.toSeq - u.fromSeq + 1 : 0);

const rangeOf = (u: Unit | undefined): Pick<UnitRun, 'shard' | 'fromSeq' | 'toSeq'> => (u?.kind === 'merge' ? { shard: u.shard, fromSeq: u.fromSeq, toSeq: u.toSeq } : {});

/** Generations sealed in this activation, per shard, with their bytes (reported, or estimated from those reported). */
function seals(a: Activation): NonNullable<DemandEntry['seals']> {
  const out: NonNullable<DemandEntry['seals']> = [];
  for (const s of a.after.shards) {
    const was = a.before.shards.find((b) => b.shard === s.shard)?.sealedThroughSeq ?? 0;
    if (s.sealedThroughSeq <= was) continue;
    const reported = new Map<number, number>();
    for (const e of a.events) {
      if (e.type === 'demand' && e.shard === s.shard && e.sealedThroughSeq > was && e.sealedThroughSeq <= s.sealedThroughSeq) reported.set(e.sealedThroughSeq, e.bytes ?? 0);
    }
    // A writer folds the seals of a burst into one demand that reports only the last
    // generation's size, and a snapshot reports none: those seals count at the mean size
    // of the ones reported here (0 when none was).
    const count = s.sealedThroughSeq - was;
    const sizes = [...reported.values()].filter((b) => b > 0);
    const sum = sizes.reduce((x, y) => x + y, 0);
    out.push({ shard: s.shard, count, bytes: sizes.length ? Math.round((sum / sizes.length) * count) : 0 });
  }
  return out;
}

function entryOf(run: UnitRun, unitId: string, end: { nowMs: number; outcome: UnitOutcome; why?: string; error?: string; rows?: number; cost?: UnitCost }): UnitHistoryEntry {
  const cost = addCosts(run.prepareCost, end.cost);
  return {
    unitId,
    kind: run.kind,
    ...(run.shard !== undefined ? { shard: run.shard, fromSeq: run.fromSeq, toSeq: run.toSeq } : {}),
    startedAtMs: run.startedAtMs,
    ...(run.readyAtMs !== undefined ? { readyAtMs: run.readyAtMs } : {}),
    ...(run.grantedAtMs !== undefined ? { grantedAtMs: run.grantedAtMs } : {}),
    endedAtMs: end.nowMs,
    outcome: end.outcome,
    why: end.why ?? run.why ?? '',
    ...(end.error ? { error: end.error } : {}),
    rows: end.rows ?? 0,
    bytesRead: cost.bytesRead,
    bytesWritten: cost.bytesWritten,
    cpuMs: cost.cpuMs,
    reservedBytes: run.reservedBytes ?? 0,
    ...(run.riders?.length ? { riders: run.riders } : {}),
  };
}

/** What a preparation that found nothing to commit found (a plan's reason), for its entry. */
function planReason(e: Extract<PolicyEvent, { type: 'prepared' }>): string {
  const p = e.prepared as { reason?: unknown } | null;
  return typeof p?.reason === 'string' ? p.reason : 'nothing to commit';
}

export function journalActivation(j: Journal, a: Activation): Journal {
  const running = { ...j.running };
  const unitBefore = (id: string) => a.before.units.find((u) => u.id === id);
  const stillWaiting = (id: string) => a.after.units.some((u) => u.id === id && u.state !== 'preparing');
  const ended: UnitHistoryEntry[] = [];
  const demand: Required<Omit<DemandEntry, 'backlog' | 'writePressure'>> = { seals: seals(a), prepared: [], turns: [], grants: [] };
  const shadow = a.after.adopted?.mode === 'shadow';

  // A turn ends: its entry carries the preparation costs of the lead and its riders.
  const endTurn = (id: string, outcome: UnitOutcome, end: { rows?: number; cost?: UnitCost; error?: string }) => {
    const run = running[id];
    if (!run) return;
    if (run.grantedAtMs !== undefined) demand.turns.push({ kind: run.kind, heldMs: a.nowMs - run.grantedAtMs });
    let prepareCost = run.prepareCost;
    for (const r of run.riders ?? []) prepareCost = addCosts(prepareCost, running[r]?.prepareCost);
    ended.push(entryOf({ ...run, prepareCost }, id, { nowMs: a.nowMs, outcome: run.shadow && outcome === 'committed' ? 'shadow' : outcome, ...end }));
    // A unit that failed keeps its prepared batch and takes the turn again later: a new entry then.
    for (const u of [id, ...(run.riders ?? [])]) {
      if (outcome !== 'committed' && stillWaiting(u) && running[u]) running[u] = { kind: running[u].kind, startedAtMs: running[u].startedAtMs, ...rangeOf(unitBefore(u)) };
      else delete running[u];
    }
  };

  // optimize and gc that rode the turn (rides.ts): an entry each, as if they had had their own.
  const rideEntries = (e: Extract<PolicyEvent, { type: 'committed' }>): UnitHistoryEntry[] => {
    const lead = running[e.unitId];
    const out: UnitHistoryEntry[] = [];
    for (const id of lead?.riders ?? []) {
      const u = unitBefore(id);
      if (!lead || !u?.rider || !isRidingKind(u.kind)) continue;
      const run = e.maintained?.[u.kind];
      const { ok, error } = rideOutcome(run);
      const at = lead.grantedAtMs ?? a.nowMs;
      const entry = entryOf({ kind: u.kind, startedAtMs: at, grantedAtMs: at, why: `rode ${e.unitId}'s turn` }, id, { nowMs: a.nowMs, outcome: ok ? 'committed' : 'failed', rows: run?.rows ?? 0, ...(error ? { error } : {}), ...(run?.cost ? { cost: run.cost } : {}) });
      out.push(entry);
    }
    return out;
  };

  for (const e of a.events) {
    switch (e.type) {
      case 'prepared': {
        const run = running[e.unitId];
        if (!run) break;
        demand.prepared.push({ kind: e.kind, ms: a.nowMs - run.startedAtMs, generations: generations(unitBefore(e.unitId)), needsCommit: e.needsCommit });
        if (e.needsCommit) {
          running[e.unitId] = { ...run, prepareCost: addCosts(run.prepareCost, e.cost) };
        } else {
          ended.push(entryOf(run, e.unitId, { nowMs: a.nowMs, outcome: 'nothing to do', why: planReason(e), cost: e.cost }));
          delete running[e.unitId];
        }
        break;
      }
      case 'prepareFailed': {
        const run = running[e.unitId];
        if (!run) break;
        ended.push(entryOf(run, e.unitId, { nowMs: a.nowMs, outcome: e.stalled ? 'stalled' : 'failed', error: e.error }));
        delete running[e.unitId];
        break;
      }
      case 'committed':
        ended.push(...rideEntries(e));
        endTurn(e.unitId, 'committed', { rows: e.rows ?? 0, ...(e.cost ? { cost: e.cost } : {}) });
        break;
      case 'commitFailed':
        endTurn(e.unitId, e.stalled ? 'stalled' : 'failed', { error: e.error, ...(e.cost ? { cost: e.cost } : {}) });
        break;
      case 'noHeadroom':
        endTurn(e.unitId, 'no headroom', {});
        break;
      default:
        break;
    }
  }

  for (const d of a.decisions) {
    if (d.type === 'prepare') {
      running[d.unit.id] = { kind: d.unit.kind, startedAtMs: a.nowMs, ...rangeOf(d.unit) };
    } else if (d.type === 'commit') {
      const u = d.unit;
      const riders = d.riders ?? [];
      // A unit with no preparation (a direct merge) starts with its turn.
      const run = running[u.id] ?? { kind: u.kind, startedAtMs: u.createdAtMs };
      running[u.id] = {
        ...run,
        ...rangeOf(u),
        grantedAtMs: a.nowMs,
        why: d.why,
        shadow: shadow && u.kind !== 'merge',
        reservedBytes: a.reservedBytes(u, riders),
        ...(u.readySinceMs !== null ? { readyAtMs: u.readySinceMs } : {}),
        ...(riders.length ? { riders: riders.map((r) => r.id) } : {}),
      };
      demand.grants.push({ kind: u.kind, waitedMs: u.readySinceMs === null ? 0 : Math.max(0, a.nowMs - u.readySinceMs) });
    }
  }

  const sealedBytes = demand.seals.reduce((s, x) => s + x.bytes, 0);
  return {
    running,
    history: recordUnits(j.history, ended, sealedBytes),
    demand: recordDemand(j.demand, { ...demand, backlog: backlogOf(a.after), writePressure: a.after.writePressure }, a.nowMs),
  };
}
