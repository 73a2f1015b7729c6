import { KINDS, type Kind, type PerKind } from './types';

// A table's demand and how long its units took, in time buckets: what
// `turnstile policy NAME --set F --dry-run` replays through the simulator (src/sim), and
// the observed turn waits it is compared with. Buckets exist only where something
// happened, so an idle table records nothing. Bounded: at most MAX_BUCKETS; when full,
// the older half is merged pairwise, so recent activity keeps 10 s buckets and older
// activity coarser ones; buckets older than MAX_AGE_MS go. Pure, plain JSON, carried
// across continue-as-new.

/** Count, sum, least and most of some durations (ms). */
export interface Durations {
  n: number;
  sumMs: number;
  minMs: number;
  maxMs: number;
}

export interface DemandBucket {
  /** The bucket covers [startMs, endMs). */
  startMs: number;
  endMs: number;
  /** Generations sealed (as the watermarks learned them) and the bytes writers reported for them. */
  seals: number;
  sealedBytes: number;
  /** Shards that sealed (first seen first), up to MAX_SHARDS_NAMED. */
  shards: string[];
  /** Preparations that ended, per kind: from start to result. */
  prepare: Partial<PerKind<Durations>>;
  /** Generations covered by the merge preparations counted in prepare.merge. */
  preparedGenerations: number;
  /** Preparations that found nothing to commit, per kind. */
  idlePrepares: Partial<PerKind<number>>;
  /** Turns, per kind: how long the commit held the turn. */
  commit: Partial<PerKind<Durations>>;
  /** Turns granted, per kind: how long the unit had been commit-ready (the observed turn waits). */
  wait: Partial<PerKind<Durations>>;
  /** Highest backlog (generations sealed, not merged) and write pressure seen in the bucket. */
  backlogPeak?: number;
  pressurePeak?: number;
}

export interface DemandRecord {
  buckets: DemandBucket[];
}

export const BUCKET_MS = 10_000;
export const MAX_BUCKETS = 144;
export const MAX_AGE_MS = 7 * 24 * 3600_000;
export const MAX_SHARDS_NAMED = 16;

export const emptyDemandRecord = (): DemandRecord => ({ buckets: [] });

/** What one activation adds to the record. */
export interface DemandEntry {
  seals?: { shard: string; count: number; bytes: number }[];
  prepared?: { kind: Kind; ms: number; generations: number; needsCommit: boolean }[];
  turns?: { kind: Kind; heldMs: number }[];
  grants?: { kind: Kind; waitedMs: number }[];
  /** The table after the activation: recorded with whatever else happened, not alone. */
  backlog?: number;
  writePressure?: number;
}

const emptyBucket = (startMs: number): DemandBucket => ({
  startMs,
  endMs: startMs + BUCKET_MS,
  seals: 0,
  sealedBytes: 0,
  shards: [],
  prepare: {},
  preparedGenerations: 0,
  idlePrepares: {},
  commit: {},
  wait: {},
});

const addDuration = (d: Durations | undefined, ms: number): Durations =>
  d ? { n: d.n + 1, sumMs: d.sumMs + ms, minMs: Math.min(d.minMs, ms), maxMs: Math.max(d.maxMs, ms) } : { n: 1, sumMs: ms, minMs: ms, maxMs: ms };

const mergeDurations = (a: Durations | undefined, b: Durations | undefined): Durations | undefined =>
  !a ? b : !b ? a : { n: a.n + b.n, sumMs: a.sumMs + b.sumMs, minMs: Math.min(a.minMs, b.minMs), maxMs: Math.max(a.maxMs, b.maxMs) };

function perKindMerge<T>(a: Partial<PerKind<T>>, b: Partial<PerKind<T>>, f: (x: T | undefined, y: T | undefined) => T | undefined): Partial<PerKind<T>> {
  const out: Partial<PerKind<T>> = {};
  for (const k of KINDS) {
    const v = f(a[k], b[k]);
    if (v !== undefined) out[k] = v;
  }
  return out;
}

const addCounts = (x: number | undefined, y: number | undefined): number | undefined => (x === undefined ? y : y === undefined ? x : x + y);

/** One bucket covering both (a before b). */
export function mergeBuckets(a: DemandBucket, b: DemandBucket): DemandBucket {
  return {
    startMs: a.startMs,
    endMs: b.endMs,
    seals: a.seals + b.seals,
    sealedBytes: a.sealedBytes + b.sealedBytes,
    shards: [...a.shards, ...b.shards.filter((s) => !a.shards.includes(s))].slice(0, MAX_SHARDS_NAMED),
    prepare: perKindMerge(a.prepare, b.prepare, mergeDurations),
    preparedGenerations: a.preparedGenerations + b.preparedGenerations,
    idlePrepares: perKindMerge(a.idlePrepares, b.idlePrepares, addCounts),
    commit: perKindMerge(a.commit, b.commit, mergeDurations),
    wait: perKindMerge(a.wait, b.wait, mergeDurations),
    ...peaks(a, b),
  };
}

const peaks = (a: Pick<DemandBucket, 'backlogPeak' | 'pressurePeak'>, b: Pick<DemandBucket, 'backlogPeak' | 'pressurePeak'>): Pick<DemandBucket, 'backlogPeak' | 'pressurePeak'> => ({
  ...(a.backlogPeak !== undefined || b.backlogPeak !== undefined ? { backlogPeak: Math.max(a.backlogPeak ?? 0, b.backlogPeak ?? 0) } : {}),
  ...(a.pressurePeak !== undefined || b.pressurePeak !== undefined ? { pressurePeak: Math.max(a.pressurePeak ?? 0, b.pressurePeak ?? 0) } : {}),
});

const isEmpty = (e: DemandEntry): boolean => !e.seals?.length && !e.prepared?.length && !e.turns?.length && !e.grants?.length;

/** The record with `entry` (what happened at nowMs) added; the same object when nothing happened. */
export function recordDemand(rec: DemandRecord, entry: DemandEntry, nowMs: number): DemandRecord {
  if (isEmpty(entry)) return rec;
  const last = rec.buckets[rec.buckets.length - 1];
  const fresh = !last || nowMs >= last.endMs;
  // Buckets start on multiples of BUCKET_MS, so a replay lines them up with its clock.
  let b: DemandBucket = fresh ? emptyBucket(Math.floor(nowMs / BUCKET_MS) * BUCKET_MS) : last;
  b = { ...b, prepare: { ...b.prepare }, idlePrepares: { ...b.idlePrepares }, commit: { ...b.commit }, wait: { ...b.wait } };
  for (const s of entry.seals ?? []) {
    b.seals += s.count;
    b.sealedBytes += s.bytes;
    if (!b.shards.includes(s.shard) && b.shards.length < MAX_SHARDS_NAMED) b.shards = [...b.shards, s.shard];
  }
  for (const p of entry.prepared ?? []) {
    b.prepare[p.kind] = addDuration(b.prepare[p.kind], p.ms);
    if (p.kind === 'merge') b.preparedGenerations += p.generations;
    if (!p.needsCommit) b.idlePrepares[p.kind] = (b.idlePrepares[p.kind] ?? 0) + 1;
  }
  for (const t of entry.turns ?? []) b.commit[t.kind] = addDuration(b.commit[t.kind], t.heldMs);
  for (const g of entry.grants ?? []) b.wait[g.kind] = addDuration(b.wait[g.kind], g.waitedMs);
  b = { ...b, ...peaks(b, { backlogPeak: entry.backlog, pressurePeak: entry.writePressure }) };
  const kept = (fresh ? rec.buckets : rec.buckets.slice(0, -1)).filter((x) => x.endMs > nowMs - MAX_AGE_MS);
  return { buckets: thin([...kept, b]) };
}

/** At most MAX_BUCKETS: the older half merged pairwise while over. */
function thin(buckets: DemandBucket[]): DemandBucket[] {
  let out = buckets;
  while (out.length > MAX_BUCKETS) {
    const half = Math.floor(out.length / 2);
    const merged: DemandBucket[] = [];
    for (let i = 0; i + 1 < half; i += 2) merged.push(mergeBuckets(out[i]!, out[i + 1]!));
    if (half % 2 === 1) merged.push(out[half - 1]!);
    out = [...merged, ...out.slice(half)];
  }
  return out;
}

/** The buckets that overlap [fromMs, toMs). */
export const bucketsBetween = (rec: DemandRecord, fromMs: number, toMs: number): DemandBucket[] => rec.buckets.filter((b) => b.endMs > fromMs && b.startMs < toMs);
