// The fleet's sweep of the generation store (src/worker/store-sweeper.ts): it finds seals
// whose demand signal never reached the table (a writer died between its seal and its
// signal) without waking idle tables. A table learns of seals from its writers' demand
// signals; only a signal lost for good leaves a shard sealed past what its table knows.
// Every sweep reads each shard's sealed-through seq. A shard that moved since the last
// sweep is being written: its next signal carries the watermark (demand is monotone,
// invariant 5) and covers any lost one, so it is left alone. A shard that stayed put for
// one whole sweep period with seals the sweeper never told its table about is told once,
// with one demand signal of its watermark. So a lost signal is found within two sweep
// periods of its shard's last seal, a shard being written costs nothing, one that goes
// quiet costs one signal (a no-op for a table that knew) and an idle table costs none.
// Pure and plain JSON: the sweeper keeps it in the storage root between sweeps.

/** Per shard: the seq the last sweep read, and the highest seq the table was told of. */
export interface SweptShard {
  seen: number;
  told: number;
}

/** Table -> shard -> what the sweeps know. */
export type SweepState = Record<string, Record<string, SweptShard>>;

export interface ShardWatermark {
  shard: string;
  sealedThroughSeq: number;
}

/** One demand signal to send: a table's quiet shards sealed past what it was told. */
export interface SweepSignal {
  table: string;
  shards: ShardWatermark[];
}

/**
 * One sweep: the store as read now (table -> shards) against the state of the last one.
 * Returns the state to keep and the signals to send; `told` moves only by markTold, once a
 * signal is delivered. A shard first seen is taken as told through 0: a table that sealed
 * before any sweep saw it is told once, when it is quiet.
 */
export function sweep(prev: SweepState, now: Record<string, ShardWatermark[]>): { next: SweepState; signals: SweepSignal[] } {
  const next: SweepState = {};
  const signals: SweepSignal[] = [];
  for (const [table, shards] of Object.entries(now)) {
    const before = prev[table] ?? {};
    const after: Record<string, SweptShard> = {};
    const quiet: ShardWatermark[] = [];
    for (const { shard, sealedThroughSeq: seq } of shards) {
      const was = before[shard];
      // A watermark never drops: one that did is a table dropped and created again.
      const told = was === undefined || seq < was.seen ? 0 : was.told;
      after[shard] = { seen: seq, told };
      if (was !== undefined && was.seen === seq && seq > told) quiet.push({ shard, sealedThroughSeq: seq });
    }
    next[table] = after;
    if (quiet.length > 0) signals.push({ table, shards: quiet });
  }
  return { next, signals };
}

/**
 * A signal was delivered, or its table has no workflow (a table's workflow reads the store
 * when it starts): its shards count as told.
 */
export function markTold(state: SweepState, signal: SweepSignal): void {
  const table = state[signal.table];
  if (table === undefined) return;
  for (const { shard, sealedThroughSeq } of signal.shards) {
    const s = table[shard];
    if (s !== undefined) s.told = Math.max(s.told, sealedThroughSeq);
  }
}
