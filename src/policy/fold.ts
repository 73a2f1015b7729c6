import { byName } from './time';
import type { ShardState, TableState } from './types';

// Demand folding (docs/design.md invariant 5). Per shard the pair (sealedThroughSeq, sealedRevision)
// only moves up in lexicographic order under demand, which is a max: replaying,
// duplicating or reordering demand events gives the same result. Only a snapshot with
// a strictly newer revision may move the seq down.

/** The shard's state, adding an unknown shard (kept sorted so the state is deterministic). */
export function shardOf(state: TableState, name: string): ShardState {
  const found = state.shards.find((s) => s.shard === name);
  if (found) return found;
  const s: ShardState = { shard: name, sealedThroughSeq: 0, sealedRevision: 0, mergedThroughSeq: 0, heldReason: null };
  state.shards = [...state.shards, s].sort((a, b) => byName(a.shard, b.shard));
  return s;
}

const valid = (seq: number, revision: number): boolean =>
  Number.isFinite(seq) && Number.isFinite(revision) && seq >= 0;

/** Whether the watermark moved. */
function raise(s: ShardState, seq: number, revision: number): boolean {
  if (seq > s.sealedThroughSeq) {
    s.sealedThroughSeq = seq;
    s.sealedRevision = revision;
    delete s.sealedBytes;
    return true;
  }
  if (seq === s.sealedThroughSeq && revision > s.sealedRevision) {
    s.sealedRevision = revision;
    return true;
  }
  return false;
}

/**
 * Folds one demand; true when it told the table something new (a shard, a higher watermark).
 * `bytes`: the size of generation `seq` (a fact about that file, so every demand for
 * it says the same): known while `seq` is the newest sealed, in any order of events.
 */
export function foldDemand(state: TableState, shard: string, seq: number, revision: number, bytes?: number): boolean {
  if (!valid(seq, revision)) return false;
  const known = state.shards.some((x) => x.shard === shard);
  const s = shardOf(state, shard);
  const raised = raise(s, seq, revision);
  if (bytes !== undefined && Number.isSafeInteger(bytes) && bytes >= 0 && s.sealedThroughSeq === seq) s.sealedBytes = bytes;
  return raised || !known;
}

export function foldSnapshot(
  state: TableState,
  entries: readonly { shard: string; sealedThroughSeq: number; revision: number }[],
): void {
  // A scan reports each shard once; should one repeat, its newest observation counts,
  // so that the rule below is judged against the state before this snapshot.
  const newest = new Map<string, { sealedThroughSeq: number; revision: number }>();
  for (const e of entries) {
    if (!valid(e.sealedThroughSeq, e.revision)) continue;
    const cur = newest.get(e.shard);
    if (!cur || e.revision > cur.revision || (e.revision === cur.revision && e.sealedThroughSeq > cur.sealedThroughSeq)) newest.set(e.shard, e);
  }
  for (const [shard, e] of newest) {
    const s = shardOf(state, shard);
    if (e.sealedThroughSeq >= s.sealedThroughSeq) {
      raise(s, e.sealedThroughSeq, e.revision);
    } else if (e.revision > s.sealedRevision) {
      // Merged generations stay merged: the watermark never drops below them.
      s.sealedThroughSeq = Math.max(e.sealedThroughSeq, s.mergedThroughSeq);
      s.sealedRevision = e.revision;
      delete s.sealedBytes;
    }
  }
}

/** A commit moved the merged watermark; sealed follows if it lagged (it must never be below). */
export function advanceMerged(state: TableState, shard: string, toSeq: number): void {
  const s = shardOf(state, shard);
  s.mergedThroughSeq = Math.max(s.mergedThroughSeq, toSeq);
  if (s.sealedThroughSeq < s.mergedThroughSeq) s.sealedThroughSeq = s.mergedThroughSeq;
}
