import { bucketsBetween, MAX_SHARDS_NAMED, type DemandBucket, type DemandRecord } from '../policy/demand-record';
import { KINDS, type PerKind } from '../policy/types';
import type { ScheduledSeal } from './types';

// A window of a table's demand record (src/policy/demand-record.ts) as simulator input:
// the seals, at the times and on the shards the record allows, and what was observed
// in it, to compare the simulation with. Pure.

export interface ReplayWindow {
  /** What was asked for: the last `hours` before toMs. */
  fromMs: number;
  toMs: number;
  /** The replay starts here: fromMs, or earlier when the first bucket began before it (buckets are not split). */
  startMs: number;
  /** The record's buckets that overlap [fromMs, toMs), in time order. */
  buckets: DemandBucket[];
}

export function replayWindow(rec: DemandRecord, toMs: number, hours: number): ReplayWindow {
  const fromMs = toMs - Math.round(hours * 3_600_000);
  const buckets = bucketsBetween(rec, fromMs, toMs).sort((a, b) => a.startMs - b.startMs);
  return { fromMs, toMs, startMs: Math.min(fromMs, buckets[0]?.startMs ?? fromMs), buckets };
}

/**
 * The shards a bucket's seals are spread over: those it names, or every shard of the
 * table when it names none, or names as many as the record keeps (MAX_SHARDS_NAMED) and
 * the table has more: then the list may be cut short.
 */
function shardsOf(b: DemandBucket, tableShards: readonly string[]): readonly string[] {
  const cut = b.shards.length >= MAX_SHARDS_NAMED && tableShards.length > b.shards.length;
  return b.shards.length === 0 || cut ? tableShards : b.shards;
}

/**
 * Every bucket's seals, evenly spread over its span (up to toMs for the bucket still
 * filling), round-robin over its shards, each reporting the bucket's mean size. The
 * record keeps counts, not times: a burst inside one bucket is smoothed over it, and
 * more so in older buckets, which the record merges as they age.
 */
export function* sealSchedule(w: ReplayWindow, tableShards: readonly string[]): Generator<ScheduledSeal> {
  for (const b of w.buckets) {
    if (b.seals <= 0) continue;
    const shards = shardsOf(b, tableShards);
    const span = Math.max(1, Math.min(b.endMs, w.toMs) - b.startMs);
    // No size reported (a snapshot found them, or older writers): the demand carries none.
    const bytes = b.sealedBytes > 0 ? Math.round(b.sealedBytes / b.seals) : undefined;
    for (let i = 0; i < b.seals; i++) {
      yield { atMs: b.startMs + Math.floor(((i + 0.5) * span) / b.seals), shard: shards[i % shards.length]!, ...(bytes !== undefined ? { bytes } : {}) };
    }
  }
}

/** Every shard the replay needs: the table's and any the window's buckets name. */
export function replayShards(w: ReplayWindow, tableShards: readonly string[]): string[] {
  return [...new Set([...tableShards, ...w.buckets.flatMap((b) => b.shards)])];
}

export interface Recorded {
  seals: number;
  sealedBytes: number;
  mergePreparations: number;
  preparedGenerations: number;
  /** Shortest and longest bucket in the window, seconds. */
  bucketSecs: { min: number; max: number };
}

export function recordedIn(w: ReplayWindow): Recorded {
  const secs = w.buckets.map((b) => (b.endMs - b.startMs) / 1000);
  return {
    seals: w.buckets.reduce((s, b) => s + b.seals, 0),
    sealedBytes: w.buckets.reduce((s, b) => s + b.sealedBytes, 0),
    mergePreparations: w.buckets.reduce((s, b) => s + (b.prepare.merge?.n ?? 0), 0),
    preparedGenerations: w.buckets.reduce((s, b) => s + b.preparedGenerations, 0),
    bucketSecs: { min: secs.length ? Math.min(...secs) : 0, max: secs.length ? Math.max(...secs) : 0 },
  };
}

/** What the table did in the window: turns granted and how long they had waited. */
export interface Observed {
  turns: PerKind<number>;
  /** null: no turn of that kind. */
  maxWaitSecs: PerKind<number | null>;
  meanWaitSecs: PerKind<number | null>;
  /** Highest backlog and write pressure the table had; null: not in the record (releases before it kept them). */
  backlogPeak: number | null;
  writePressurePeak: number | null;
}

export function observedIn(w: ReplayWindow): Observed {
  const per = <T>(f: (k: (typeof KINDS)[number]) => T): PerKind<T> => Object.fromEntries(KINDS.map((k) => [k, f(k)])) as PerKind<T>;
  const waits = per((k) => w.buckets.map((b) => b.wait[k]).filter((d) => d !== undefined && d.n > 0));
  const peak = (f: (b: ReplayWindow['buckets'][number]) => number | undefined): number | null => {
    const v = w.buckets.map(f).filter((x): x is number => x !== undefined);
    return v.length ? Math.max(...v) : null;
  };
  return {
    backlogPeak: peak((b) => b.backlogPeak),
    writePressurePeak: peak((b) => b.pressurePeak),
    turns: per((k) => waits[k].reduce((s, d) => s + d!.n, 0)),
    maxWaitSecs: per((k) => (waits[k].length ? Math.max(...waits[k].map((d) => d!.maxMs)) / 1000 : null)),
    meanWaitSecs: per((k) => {
      const n = waits[k].reduce((s, d) => s + d!.n, 0);
      return n ? waits[k].reduce((s, d) => s + d!.sumMs, 0) / n / 1000 : null;
    }),
  };
}
