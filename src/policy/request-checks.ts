import type { Kind, TableState } from './types';

// Checks a well-shaped request against the table as it is now (a buggy or
// hostile client must not make the workflow wait forever, invent shards or repeat
// operator actions). Pure: the workflow's signal handlers and update validators call it
// on the state, clients on the `state` query's view before sending. Each function
// returns null (accepted) or one line saying why not.

/** What the checks need to know of a table; built from the state or from the status view. */
export interface TableFacts {
  table: string;
  shards: readonly { shard: string; sealedThroughSeq: number; heldReason: string | null }[];
  paused: boolean;
  pausedKinds: readonly Kind[];
  /** Ids of the units that exist now (queued, preparing, holding or riding in the turn). */
  unitIds: readonly string[];
  hardBacklog: number;
}

/**
 * How far past a shard's known sealed-through seq a seq may still be plausible: a
 * writer's seals can be ahead of the workflow by its lost or in-flight demand, but a
 * writer is refused at hardBacklog, so more than twice that (and at least 100,000)
 * ahead is a bug, not lag.
 */
export const seqHorizon = (hardBacklog: number): number => Math.max(2 * hardBacklog, 100_000);

export function factsOf(state: TableState): TableFacts {
  return {
    table: state.table,
    shards: state.shards,
    paused: state.paused,
    pausedKinds: state.pausedKinds,
    unitIds: state.units.map((u) => u.id),
    hardBacklog: state.policy.hardBacklog,
  };
}

function shardProblem(f: TableFacts, shard: string, seq: number, what: string): string | null {
  const s = f.shards.find((x) => x.shard === shard);
  if (!s) return `shard: ${JSON.stringify(shard)} is not a shard of ${f.table}; accepted: ${f.shards.map((x) => x.shard).join(', ')}`;
  const max = s.sealedThroughSeq + seqHorizon(f.hardBacklog);
  if (seq > max) return `${what}: ${seq} is beyond anything plausible for ${f.table}/${shard} (sealed through ${s.sealedThroughSeq}); accepted: at most ${max}`;
  return null;
}

export const refuseDemand = (f: TableFacts, d: { shard: string; sealedThroughSeq: number }): string | null =>
  shardProblem(f, d.shard, d.sealedThroughSeq, 'sealedThroughSeq');

export const refuseAwaitMerged = (f: TableFacts, r: { shard: string; seq: number }): string | null => shardProblem(f, r.shard, r.seq, 'seq');

/** A unit bump names a unit that exists now; a kind bump is always meaningful (it also makes a periodic kind due). */
export function refuseBump(f: TableFacts, target: { kind?: Kind; unitId?: string }): string | null {
  if (target.unitId === undefined || f.unitIds.includes(target.unitId)) return null;
  const now = f.unitIds.length > 0 ? f.unitIds.join(', ') : 'none';
  return `unit: ${JSON.stringify(target.unitId)} is not a unit of ${f.table} now; units now: ${now}`;
}

export function refusePause(f: TableFacts, kind: Kind | null): string | null {
  if (f.paused) return `${f.table} is already paused`;
  if (kind !== null && f.pausedKinds.includes(kind)) return `kind ${kind} of ${f.table} is already paused`;
  return null;
}

/** Resume has something to do: a pause to lift, or (table or merge) held shards to acknowledge. */
export function refuseResume(f: TableFacts, kind: Kind | null): string | null {
  const held = (kind === null || kind === 'merge') && f.shards.some((s) => s.heldReason !== null);
  if (held) return null;
  if (kind === null) return f.paused || f.pausedKinds.length > 0 ? null : `${f.table} is not paused`;
  // Resuming a kind lifts only that kind's pause (a table pause stays), see events.ts.
  return f.pausedKinds.includes(kind) ? null : `kind ${kind} of ${f.table} is not paused`;
}
