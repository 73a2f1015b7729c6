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

describe('simulator inputs for a replay', () => {
  it('seals at scheduled times and times activities by the model at their start', () => {
    const seen: { shard: string; seq: number; atMs: number }[] = [];
    const asked: { phase: string; kind: string; generations: number; atMs: number }[] = [];
    const r = runSimulation({
      shards: ['s0', 's1'],
      policy: simPolicy({ periodSecs: { optimize: 0, index: 0, gc: 0 } }),
      seed: 1,
      startMs: 1_000,
      endMs: 60_000,
      // Unused: the model decides.
      prepareMs: { merge: 99_999, optimize: 99_999, index: 99_999, gc: 99_999 },
      commitMs: { merge: 99_999, optimize: 99_999, index: 99_999, gc: 99_999 },
      seals: [
        { atMs: 2_000, shard: 's0', bytes: 10 },
        { atMs: 2_000, shard: 's1' },
        { atMs: 5_000, shard: 's0', bytes: 10 },
      ],
      activities: {
        durationMs: (a) => {
          asked.push({ phase: a.phase, kind: a.kind, generations: a.generations, atMs: a.atMs });
          return a.phase === 'prepare' ? 700 : 300;
        },
        needsCommit: () => 1,
      },
      onSeal: (s) => seen.push({ shard: s.shard, seq: s.seq, atMs: s.atMs }),
      stopWhen: (state, _now, sim) => sim.arrivalsDone && state.shards.every((s) => s.mergedThroughSeq === sim.sealed[s.shard]),
    });
    expect(seen).toEqual([
      { shard: 's0', seq: 1, atMs: 2_000 },
      { shard: 's1', seq: 1, atMs: 2_000 },
      { shard: 's0', seq: 2, atMs: 5_000 },
    ]);
    expect(r.sealed).toEqual({ s0: 2, s1: 1 });
    // s0's small generations merge directly (a commit only); s1's, without a size, is prepared first.
    expect(asked).toContainEqual({ phase: 'prepare', kind: 'merge', generations: 1, atMs: 2_000 });
    expect(asked.filter((a) => a.phase === 'commit')).toHaveLength(r.turns.length);
    for (const t of r.turns) expect(t.releasedAtMs! - t.grantedAtMs).toBe(300);
    expect(r.nowMs).toBeLessThan(10_000);
  });
});
