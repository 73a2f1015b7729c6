import { hasChanged, markPlanned } from './idle';
import { blockedByOperator } from './order';
import { periodicSlackMs } from './due-slack';
import { mergeComing, mergesPaused, ridesMerges } from './rides';
import { shardBacklog } from './pressure';
import { byName } from './time';
import type { Kind, PeriodicKind, TableState, Unit } from './types';

export type { PeriodicKind };
export const PERIODIC_KINDS: readonly PeriodicKind[] = ['optimize', 'index', 'gc'];

export const mergeUnitId = (shard: string): string => `merge/${shard}`;
/** A follower's id names where it starts: ids stay unique as ranges move on. */
export const followerUnitId = (shard: string, fromSeq: number): string => `merge/${shard}@${fromSeq}`;

/** The merge units of a shard in seq order: the head first, then at most one follower. */
export const mergeUnitsOf = (state: TableState, shard: string): Unit[] =>
  state.units.filter((u) => u.kind === 'merge' && u.shard === shard).sort((a, b) => (a.fromSeq ?? 0) - (b.fromSeq ?? 0));

export const isPeriodic = (k: Kind | string): k is PeriodicKind => (PERIODIC_KINDS as readonly string[]).includes(k);

/** A unit that should exist now but does not (yet). */
export type Wanted = {
  id: string;
  /** Since when it is due (periodic kinds); null for merges. */
  dueSinceMs: number | null;
} & ({ kind: 'merge'; shard: string; fromSeq: number; toSeq: number } | { kind: PeriodicKind; shard: null; fromSeq: null; toSeq: null });

/**
 * Everything that should have a unit, in the order preparation slots are handed out.
 * The periodic kinds come first: there is at most one unit of each, so they cannot
 * crowd merges out for long, whereas a stream of merges over many shards could keep
 * every slot busy and starve optimize of a preparation forever. Merges then go by
 * largest backlog, so a lagging shard catches up first, and pipelined followers last.
 */
export function wantedUnits(state: TableState, nowMs: number): Wanted[] {
  const has = new Set(state.units.map((u) => u.id));
  const out: Wanted[] = [];
  for (const kind of PERIODIC_KINDS) {
    const due = state.dueAtMs[kind];
    if (due <= nowMs && !has.has(kind) && hasChanged(state, kind)) out.push({ id: kind, kind, shard: null, fromSeq: null, toSeq: null, dueSinceMs: due });
  }
  const shards = state.shards
    .filter((s) => shardBacklog(s) > 0)
    .sort((a, b) => shardBacklog(b) - shardBacklog(a) || byName(a.shard, b.shard));
  const followers: Wanted[] = [];
  for (const s of shards) {
    const units = mergeUnitsOf(state, s.shard);
    if (units.length === 0) {
      out.push({ id: mergeUnitId(s.shard), kind: 'merge', shard: s.shard, fromSeq: s.mergedThroughSeq + 1, toSeq: s.sealedThroughSeq, dueSinceMs: null });
      continue;
    }
    // Pipelining: what was sealed after the head's range prepares while the head waits
    // for or holds the turn, so the turn does not sit idle through that preparation
    // once the head has committed. One follower, and only once the head is prepared:
    // followers then cover all that arrived meanwhile instead of one generation each.
    const head = units[0]!;
    const from = (head.toSeq ?? s.mergedThroughSeq) + 1;
    if (units.length === 1 && head.state !== 'preparing' && s.sealedThroughSeq >= from) {
      followers.push({ id: followerUnitId(s.shard, from), kind: 'merge', shard: s.shard, fromSeq: from, toSeq: s.sealedThroughSeq, dueSinceMs: null });
    }
  }
  // Followers last: a shard with nothing in flight can commit as soon as it is prepared.
  return [...out, ...followers];
}

export function newUnit(w: Wanted, nowMs: number): Unit {
  const { id, kind, shard, fromSeq, toSeq } = w;
  const range = kind === 'merge' ? { kind, shard, fromSeq, toSeq } : { kind, shard, fromSeq, toSeq };
  return {
    id,
    ...range,
    state: 'preparing',
    createdAtMs: nowMs,
    readySinceMs: null,
    promotedAtMs: null,
    notBeforeMs: null,
    commitAttempts: 0,
    prepared: null,
    reservedBytes: 0,
    lastError: null,
  };
}

export const preparingCount = (state: TableState): number => state.units.filter((u) => u.state === 'preparing').length;

/**
 * The size of a merge's one generation when it needs no preparation activity: a single
 * seq, the newest sealed, whose writer reported its bytes, within directMergeMaxBytes,
 * and no other merge of its shard in flight.
 * Preparing it would read the file, find it is its own newest row per key, and hand
 * the commit its path: that costs an activity and a workflow task for a few ms of work,
 * which the commit then does itself (reading, checking and, if keys repeat, keeping the
 * newest row of each; activities/commit-merge.ts). Bigger generations prepare as
 * before, outside the turn.
 */
function directBytes(state: TableState, w: Wanted): number | null {
  if (w.kind !== 'merge' || w.fromSeq !== w.toSeq) return null;
  // Heads only: a follower ready at once would wait for its head's turn as if it were
  // commit-ready, unlike one whose preparation overlaps that wait.
  if (mergeUnitsOf(state, w.shard).length > 0) return null;
  const s = state.shards.find((x) => x.shard === w.shard);
  if (!s || s.sealedThroughSeq !== w.toSeq || s.sealedBytes === undefined || s.sealedBytes > state.policy.directMergeMaxBytes) return null;
  return s.sealedBytes;
}

/** A unit created commit-ready, with the generation itself as its batch. */
function makeDirect(u: Unit, bytes: number, nowMs: number): void {
  if (u.kind !== 'merge') return;
  u.state = 'ready';
  u.readySinceMs = nowMs;
  u.reservedBytes = bytes;
  u.prepared = { shard: u.shard, fromSeq: u.fromSeq, toSeq: u.toSeq, preparedPath: null, rows: 0, bytes, attempt: 1, resumedFromFile: 0, resumedVia: null, direct: true };
}

/**
 * Whether a due optimize or gc that rides merges leaves this turn to one: a merge is
 * coming, or, unless merges are paused, one may still come before its slack is out
 * (due-slack.ts); after that it runs as a unit of its own, as on a table gone quiet.
 */
function waitsForMerge(state: TableState, w: Wanted, merging: boolean, nowMs: number): boolean {
  if (!isPeriodic(w.kind) || !ridesMerges(state, w.kind)) return false;
  if (merging) return true;
  return !mergesPaused(state) && nowMs < state.dueAtMs[w.kind] + periodicSlackMs(state, w.kind);
}

/**
 * Creates the units that may start now (adds them to state) and returns those that
 * prepare; a direct merge (directBytes) is created commit-ready and takes no slot.
 */
export function createUnits(state: TableState, nowMs: number): Unit[] {
  let free = state.policy.maxConcurrentPreparations - preparingCount(state);
  const created: Unit[] = [];
  const wanted = wantedUnits(state, nowMs);
  const merging = mergeComing(state, wanted.some((w) => w.kind === 'merge' && blockedByOperator(state, w) === null));
  for (const w of wanted) {
    if (blockedByOperator(state, w) !== null) continue;
    // Goes with the next merge's turn instead (rides.ts; evaluate.ts makes it then).
    if (waitsForMerge(state, w, merging, nowMs)) continue;
    const direct = directBytes(state, w);
    if (direct !== null) {
      const u = newUnit(w, nowMs);
      makeDirect(u, direct, nowMs);
      state.units.push(u);
      continue;
    }
    if (free <= 0) continue;
    const u = newUnit(w, nowMs);
    if (isPeriodic(u.kind)) markPlanned(state, u.kind);
    state.units.push(u);
    created.push(u);
    free--;
  }
  return created;
}
