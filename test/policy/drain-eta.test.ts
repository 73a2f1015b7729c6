import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addRateSample, DRAIN_SAMPLE_EVERY_MS, DRAIN_WINDOW_MS, estimateDrain, formatDrain, rateSample, type DrainEstimate, type RateSample } from '../../src/policy';
import { runSimulation, simPolicy, type SimConfig } from '../../src/sim';

// The drain ETA estimator against the simulator's truth: the simulated run records,
// every 10 s, what the estimator says from the window the workflow would keep, and
// afterwards when the backlog really reached 0.

const SEC = 1000;

interface Point {
  atMs: number;
  estimate: DrainEstimate;
  backlog: number;
}

/** Runs `cfg`, estimating every 10 s as the workflow shell does (window of samples, one a second at most). */
function estimatesAlong(cfg: SimConfig): { points: Point[]; zeroAt: number[] } {
  let window: RateSample[] = [];
  let nextAt = cfg.startMs ?? 0;
  const points: Point[] = [];
  const zeroAt: number[] = [];
  let lastBacklog = -1;
  runSimulation({
    ...cfg,
    onStep: ({ nowMs, after }) => {
      const now = rateSample(after, nowMs);
      window = addRateSample(window, now);
      const backlog = now.sealed - now.merged;
      if (backlog === 0 && lastBacklog !== 0) zeroAt.push(nowMs);
      lastBacklog = backlog;
      while (nowMs >= nextAt) {
        points.push({ atMs: nextAt, estimate: estimateDrain(window, { ...now, atMs: nextAt }), backlog });
        nextAt += 10 * SEC;
      }
    },
  });
  return { points, zeroAt };
}

/** 2 shards, one generation per shard every `everyMs`; merges paused for the first `pauseMs`. */
function scenario(everyMs: number, pauseMs: number, endMs: number): SimConfig {
  return {
    shards: ['s0', 's1'],
    policy: simPolicy({ periodSecs: { optimize: 0, index: 0, gc: 0 }, softBacklog: 100_000, hardBacklog: 1_000_000 }),
    seed: 11,
    endMs,
    prepareMs: { merge: 200, optimize: 1_000, index: 1_000, gc: 1_000 },
    mergeMsPerGeneration: 500, // 2 generations a second per shard at most
    commitMs: { merge: [100, 300], optimize: 5_000, index: 1_000, gc: 1_000 },
    arrivals: [{ everyMs, deliveryDelayMs: [0, 200] }],
    operator: [
      { atMs: 0, event: { type: 'pause', kind: 'merge' } },
      { atMs: pauseMs, event: { type: 'resume', kind: 'merge' } },
    ],
  };
}

describe('drain ETA on the simulator', () => {
  it('a backlog draining under steady inflow: once two merges were measured, estimates are within 40 % (+15 s) of when it really hit 0', () => {
    // Inflow 2 x 1/s, merging up to 2 x 2/s: a 20-minute pause builds ~2400 generations,
    // which drain at about 2/s net, i.e. in about 20 minutes. Merges self-batch: the
    // first takes each shard's 1200 (600 s), the next the 600 sealed meanwhile (300 s) ...
    const resumeAt = 1200 * SEC;
    const { points, zeroAt } = estimatesAlong(scenario(1_000, resumeAt, 50 * 60 * SEC));
    const drainedAt = zeroAt.find((t) => t > resumeAt);
    expect(drainedAt, 'the simulated backlog drains').toBeDefined();
    const drainSecs = (drainedAt! - resumeAt) / SEC;
    expect(drainSecs).toBeGreaterThan(1000);
    expect(drainSecs).toBeLessThan(1400);
    // From the second merge on (resume + 600 s + 300 s) there is a merge rate to measure.
    const judged = points.filter((p) => p.atMs >= resumeAt + 950 * SEC && p.atMs < drainedAt!);
    expect(judged.length).toBeGreaterThan(15);
    const errors = judged.map((p) => {
      const truthSecs = (drainedAt! - p.atMs) / SEC;
      expect(p.estimate.state, `at ${p.atMs / SEC} s`).toBe('draining');
      expect(Math.abs(p.estimate.etaSecs! - truthSecs), `at ${p.atMs / SEC} s: estimated ${p.estimate.etaSecs} s, truth ${truthSecs} s`).toBeLessThanOrEqual(0.4 * truthSecs + 15);
      return Math.abs(p.estimate.etaSecs! - truthSecs) / truthSecs;
    });
    errors.sort((x, y) => x - y);
    console.log(`drain ETA: ${judged.length} estimates, relative error median ${(errors[errors.length >> 1]! * 100).toFixed(0)} %, max ${(errors[errors.length - 1]! * 100).toFixed(0)} %; drain took ${drainSecs} s`);
    // While merges were paused the backlog could not drain: never at current rates.
    const paused = points.filter((p) => p.atMs >= 10 * SEC && p.atMs < resumeAt);
    expect(paused.every((p) => p.estimate.state === 'never')).toBe(true);
    expect(formatDrain(paused[paused.length - 1]!.estimate)).toContain('never at current rates');
  });

  it('inflow faster than merging: "never" once the window is full, and indeed the backlog never reaches 0', () => {
    // Inflow 2 x 4/s, merging at most 2 x 2/s.
    const { points, zeroAt } = estimatesAlong(scenario(250, 0, 20 * 60 * SEC));
    const judged = points.filter((p) => p.atMs >= DRAIN_WINDOW_MS);
    expect(judged.length).toBeGreaterThan(50);
    expect(judged.filter((p) => p.estimate.state !== 'never')).toEqual([]);
    expect(zeroAt.filter((t) => t >= DRAIN_WINDOW_MS)).toEqual([]);
    expect(judged[judged.length - 1]!.backlog).toBeGreaterThan(judged[0]!.backlog);
  });
});

describe('drain ETA estimator', () => {
  const sampleArb = fc.record({ sealed: fc.nat(10_000), merged: fc.nat(10_000), dtMs: fc.integer({ min: 0, max: 60_000 }) });

  it('drained iff backlog 0; an ETA only when merging outpaces sealing; never negative', () => {
    fc.assert(
      fc.property(fc.array(sampleArb, { minLength: 1, maxLength: 60 }), (raw) => {
        let atMs = 0;
        let window: RateSample[] = [];
        let sealed = 0;
        let merged = 0;
        for (const r of raw) {
          atMs += r.dtMs;
          sealed += r.sealed;
          merged = Math.min(sealed, merged + r.merged);
          window = addRateSample(window, { atMs, sealed, merged });
        }
        const now = { atMs, sealed, merged };
        const e = estimateDrain(window, now);
        expect(e.state === 'drained').toBe(sealed === merged);
        if (e.state === 'draining') {
          expect(e.etaSecs!).toBeGreaterThan(0);
          expect(e.mergedPerSec).toBeGreaterThan(e.sealedPerSec);
        } else if (e.state !== 'drained') expect(e.etaSecs).toBeNull();
        // The window stays bounded: one sample per DRAIN_SAMPLE_EVERY_MS over the window at most.
        expect(window.length).toBeLessThanOrEqual(DRAIN_WINDOW_MS / DRAIN_SAMPLE_EVERY_MS + 1);
        expect(window.every((w) => atMs - w.atMs <= DRAIN_WINDOW_MS)).toBe(true);
      }),
    );
  });
});
