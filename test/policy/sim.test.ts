import { describe, expect, it } from 'vitest';
import { formatSummary, runSimulation, simPolicy, summarize, type SimConfig } from '../../src/sim';

const HOUR = 3_600_000;

/** The bench scenario (bench/simulate-hot-merger.ts): a hot merger on 2 shards plus optimize every minute. */
const hotMerger = (seed: number): SimConfig => ({
  shards: ['s0', 's1'],
  policy: simPolicy({ periodSecs: { optimize: 0, index: 0, gc: 0 }, softBacklog: 50, hardBacklog: 500 }),
  seed,
  endMs: HOUR,
  prepareMs: { merge: [1_000, 3_000], optimize: [3_000, 6_000], index: 1_000, gc: 1_000 },
  commitMs: { merge: [1_500, 3_500], optimize: [10_000, 20_000], index: 5_000, gc: 5_000 },
  arrivals: [{ everyMs: [500, 1_500], deliveryDelayMs: [0, 200], duplicateProb: 0.05 }],
  optimizeEverySecs: 60,
  sampleEveryMs: 5 * 60_000,
});

describe('simulator', () => {
  it('is deterministic for a seed', () => {
    const a = runSimulation({ ...hotMerger(7), endMs: 10 * 60_000 });
    const b = runSimulation({ ...hotMerger(7), endMs: 10 * 60_000 });
    expect(JSON.stringify(b)).toBe(JSON.stringify(a));
  });

  it('hot merger: optimize keeps getting turns, waits stay bounded, backlog stays below soft', () => {
    const r = runSimulation(hotMerger(42));
    const s = summarize(r);
    const p = r.state.policy;
    // Requested 60 times in the hour; each request is served before the next one.
    expect(s.turns.optimize).toBeGreaterThanOrEqual(55);
    expect(s.turns.merge).toBeGreaterThan(500);
    // Within its promotion deadline plus a few turns (optimize commits last up to 20 s).
    expect(s.maxWaitSecs.optimize).toBeLessThanOrEqual(p.maxTurnWaitSecs.optimize + 3 * 20);
    expect(s.maxWaitSecs.merge).toBeLessThanOrEqual(p.maxTurnWaitSecs.merge + 3 * 20);
    expect(Math.max(...s.backlog.map((b) => b.backlog))).toBeLessThan(p.softBacklog);
    expect(s.backlog).toHaveLength(13);
    expect(formatSummary(s)).toContain('optimize');
  });
});
