import { mergeBuckets, type DemandBucket, type Durations } from '../policy/demand-record';
import { KINDS, type Kind, type PerKind } from '../policy/types';
import type { Rng } from './rng';
import type { ActivityModel } from './types';

// Activity durations for a replay, drawn from a table's demand record
// (src/policy/demand-record.ts): an activity that starts at simulated time t takes a
// duration drawn from the bucket that covers t, else from the whole window, else from
// REPLAY_DEFAULTS. Pure.

type Phase = 'prepare' | 'commit';

/**
 * Used only for a kind with no recorded durations in the whole window (e.g. a merge
 * preparation when every recorded merge was direct, and the proposed policy turns direct
 * merges off). Rough orders of a small table on a local disk, not measurements.
 */
export const REPLAY_DEFAULTS: Record<Phase, PerKind<number>> = {
  prepare: { merge: 500, optimize: 500, index: 300, gc: 300 },
  commit: { merge: 300, optimize: 5_000, index: 5_000, gc: 1_000 },
};

/** Where a kind's durations come from over a window. */
export interface DurationSources {
  /** Kinds with no recorded durations of that phase anywhere in the window: REPLAY_DEFAULTS. */
  defaulted: Record<Phase, Kind[]>;
  /** Kinds other than merge never prepared in the window: assumed to find nothing to commit. */
  neverPrepared: Kind[];
}

/**
 * A draw with mean exactly sumMs/n within [minMs, maxMs]: uniform on [min, mean] with
 * probability (max - mean) / (max - min), else uniform on [mean, max]. A triangle cannot
 * always have that mean (one slow commit among many fast ones puts the mode outside the
 * range); this can, and it never leaves the recorded range.
 */
export function drawDuration(d: Durations, rng: Rng): number {
  const mean = d.sumMs / d.n;
  const lo = Math.min(d.minMs, mean);
  const hi = Math.max(d.maxMs, mean);
  if (!(hi > lo)) return Math.round(mean);
  const low = rng() < (hi - mean) / (hi - lo);
  const u = rng();
  return Math.round(low ? lo + (mean - lo) * u : mean + (hi - mean) * u);
}

/** Generations per merge preparation, where the bucket recorded any. */
const generationsPerPrepare = (b: DemandBucket): number | null => {
  const n = b.prepare.merge?.n ?? 0;
  return n > 0 && b.preparedGenerations > 0 ? b.preparedGenerations / n : null;
};

const durationsOf = (b: DemandBucket, phase: Phase, kind: Kind): Durations | undefined => {
  const d = phase === 'prepare' ? b.prepare[kind] : b.commit[kind];
  return d && d.n > 0 ? d : undefined;
};

/** The bucket covering t, by binary search over buckets in time order. */
function bucketAt(buckets: readonly DemandBucket[], t: number): DemandBucket | undefined {
  let lo = 0;
  let hi = buckets.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const b = buckets[mid]!;
    if (t < b.startMs) hi = mid - 1;
    else if (t >= b.endMs) lo = mid + 1;
    else return b;
  }
  return undefined;
}

export function recordedActivities(buckets: readonly DemandBucket[]): { model: ActivityModel; sources: DurationSources } {
  const whole = buckets.length ? buckets.reduce((a, b) => mergeBuckets(a, b)) : undefined;
  // Merges are not in it: a merge always has something to commit.
  const neverPrepared = KINDS.filter((k) => k !== 'merge' && (!whole || !durationsOf(whole, 'prepare', k)));
  const defaulted = {
    prepare: KINDS.filter((k) => !whole || !durationsOf(whole, 'prepare', k)),
    commit: KINDS.filter((k) => !whole || !durationsOf(whole, 'commit', k)),
  };

  /** The bucket at t if it recorded this phase of this kind, else the whole window's. */
  const source = (phase: Phase, kind: Kind, t: number): DemandBucket | undefined => {
    const b = bucketAt(buckets, t);
    if (b && durationsOf(b, phase, kind)) return b;
    return whole && durationsOf(whole, phase, kind) ? whole : undefined;
  };

  const model: ActivityModel = {
    durationMs({ phase, kind, generations, atMs }, rng) {
      const b = source(phase, kind, atMs);
      if (!b) return REPLAY_DEFAULTS[phase][kind] * (phase === 'prepare' && kind === 'merge' ? Math.max(1, generations) : 1);
      const ms = drawDuration(durationsOf(b, phase, kind)!, rng);
      if (phase !== 'prepare' || kind !== 'merge') return ms;
      // The record keeps sums only, so a preparation's fixed part cannot be told from its
      // per-generation part: a merge preparation is taken as proportional to the
      // generations it covers. That overstates a range much longer than recorded ones
      // (their fixed part is counted per generation) and understates a much shorter one.
      const per = generationsPerPrepare(b) ?? (whole && generationsPerPrepare(whole)) ?? 1;
      return Math.round((ms * Math.max(1, generations)) / per);
    },
    needsCommit(kind, atMs) {
      const b = source('prepare', kind, atMs);
      const n = b?.prepare[kind]?.n ?? 0;
      // Never prepared in the window: an index kind whose table configures no index, a
      // period longer than the window. Assume its preparations would find nothing; the
      // report says so (sources.neverPrepared).
      if (!b || n === 0) return 0;
      return Math.max(0, 1 - (b.idlePrepares[kind] ?? 0) / n);
    },
  };
  return { model, sources: { defaulted, neverPrepared } };
}
