import type { TableState } from './types';

// Drain ETA: seconds until the backlog reaches 0 if merging and sealing go on at the
// rates of the recent window. Pure: the workflow shell keeps the window (one sample per
// DRAIN_SAMPLE_EVERY_MS at most, the last DRAIN_WINDOW_MS) and asks for an estimate when it publishes.
// Rates come from totals over all shards: merged generations per second and sealed
// generations per second; the backlog shrinks at their difference.

export interface RateSample {
  atMs: number;
  /** Sum over shards of sealedThroughSeq. */
  sealed: number;
  /** Sum over shards of mergedThroughSeq. */
  merged: number;
}

export type DrainState = 'drained' | 'draining' | 'never' | 'measuring';

export interface DrainEstimate {
  /** drained: backlog 0; never: inflow keeps up with merging; measuring: window too short to tell. */
  state: DrainState;
  /** Seconds until backlog 0 (0 when drained); null unless drained or draining. */
  etaSecs: number | null;
  mergedPerSec: number;
  sealedPerSec: number;
  windowSecs: number;
}

export const DRAIN_WINDOW_MS = 600_000;
/** Samples closer than this are not kept (a hot table has many activations a second): at most 120 samples. */
export const DRAIN_SAMPLE_EVERY_MS = 5_000;
/** Less history than this is too little to call a rate. */
export const DRAIN_MIN_WINDOW_MS = 5_000;

export function rateSample(state: TableState, atMs: number): RateSample {
  let sealed = 0;
  let merged = 0;
  for (const s of state.shards) {
    sealed += s.sealedThroughSeq;
    merged += Math.min(s.mergedThroughSeq, s.sealedThroughSeq);
  }
  return { atMs, sealed, merged };
}

/** The window with `s` added: at most one sample per DRAIN_SAMPLE_EVERY_MS, none older than the window needs. */
export function addRateSample(window: readonly RateSample[], s: RateSample): RateSample[] {
  const last = window[window.length - 1];
  if (last && s.atMs - last.atMs < DRAIN_SAMPLE_EVERY_MS) return [...window];
  const kept = window.filter((w) => s.atMs - w.atMs <= DRAIN_WINDOW_MS);
  return [...kept, s];
}

/**
 * Estimate from the window and `now` (the current totals). Merges self-batch (a merge
 * takes a shard's whole sealed range), so merged totals rise in steps; the merge rate is
 * measured between the first and the last step in the window (what merging achieves
 * while busy), the sealing rate over the whole window. With one step or none there is
 * no merge rate to measure: with none in a full window merging is at 0 ("never"), with
 * one the estimate waits for the next. The backlog shrinks at merging minus sealing.
 */
export function estimateDrain(window: readonly RateSample[], now: RateSample): DrainEstimate {
  const backlog = Math.max(0, now.sealed - now.merged);
  const samples = [...window.filter((w) => now.atMs - w.atMs <= DRAIN_WINDOW_MS && w.atMs < now.atMs), now];
  const first = samples[0]!;
  const spanMs = now.atMs - first.atMs;
  const windowSecs = spanMs / 1000;
  const sealedPerSec = spanMs > 0 ? Math.max(0, now.sealed - first.sealed) / windowSecs : 0;
  const steps = samples.filter((s, i) => i > 0 && s.merged > samples[i - 1]!.merged);
  const [a, b] = [steps[0], steps[steps.length - 1]];
  const mergedPerSec = a && b && b.atMs > a.atMs ? (b.merged - a.merged) / ((b.atMs - a.atMs) / 1000) : 0;
  const base = { mergedPerSec, sealedPerSec, windowSecs };
  if (backlog === 0) return { state: 'drained', etaSecs: 0, ...base };
  if (spanMs < DRAIN_MIN_WINDOW_MS || steps.length === 1) return { state: 'measuring', etaSecs: null, ...base };
  const net = mergedPerSec - sealedPerSec;
  if (net <= 0) return { state: 'never', etaSecs: null, ...base };
  // The merge in flight has been working since the last step: count its share as done,
  // but no more than one average step of it (a stopped merger must not look finished).
  const stepSecs = (b!.atMs - a!.atMs) / 1000 / (steps.length - 1);
  const inFlightSecs = Math.min((now.atMs - b!.atMs) / 1000, stepSecs);
  const remaining = Math.max(0, backlog - mergedPerSec * inFlightSecs);
  return { state: 'draining', etaSecs: Math.max(1, remaining / net), ...base };
}

/** For status and the UI: "~42 s", "never at current rates", ... */
export function formatDrain(e: DrainEstimate): string {
  switch (e.state) {
    case 'drained':
      return 'drained';
    case 'measuring':
      return `measuring (${e.windowSecs.toFixed(0)} s of rates)`;
    case 'never':
      return `never at current rates (merging ${e.mergedPerSec.toFixed(2)}/s, sealing ${e.sealedPerSec.toFixed(2)}/s)`;
    case 'draining':
      return `~${Math.ceil(e.etaSecs ?? 0)} s (merging ${e.mergedPerSec.toFixed(2)}/s, sealing ${e.sealedPerSec.toFixed(2)}/s)`;
  }
}
