import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BUCKET_MS, type DemandBucket, type DemandRecord, type Durations } from '../../src/policy/demand-record';
import type { Policy } from '../../src/policy/types';
import { simPolicy } from '../../src/sim';
import { policyDryRun, type DryRunInput } from '../../src/sim/dry-run';
import { drawDuration, recordedActivities } from '../../src/sim/recorded-durations';
import { replayWindow, sealSchedule } from '../../src/sim/replay';
import { mulberry32 } from '../../src/util/mulberry32';
import { formatDryRun, noDemandLine } from '../../src/cli/dry-run-report';

// The policy dry run (src/sim/dry-run.ts): a table's demand record replayed through the
// simulator under two policies. Records here are built by hand, as the workflow's
// journal would have built them (src/policy/demand-record.ts).

const NOW = 1_800_000_000_000;
const HOUR = 3_600_000;

const fixed = (ms: number, n = 1): Durations => ({ n, sumMs: ms * n, minMs: ms, maxMs: ms });

function bucket(startMs: number, b: Partial<DemandBucket> = {}): DemandBucket {
  return { startMs, endMs: startMs + BUCKET_MS, seals: 0, sealedBytes: 0, shards: [], prepare: {}, preparedGenerations: 0, idlePrepares: {}, commit: {}, wait: {}, ...b };
}

function deepFreeze<T>(v: T): T {
  if (v && typeof v === 'object') {
    for (const x of Object.values(v)) deepFreeze(x);
    Object.freeze(v);
  }
  return v;
}

/**
 * Half an hour of a table whose merges are outranked by slow periodic kinds: merge in
 * class 3, optimize, index and gc in class 2 with 20-30 s commits and 5 s periods, so
 * after every merge commit all three take the turn before the next merge. A burst of
 * seals in the middle (20 per 10 s instead of 1), each generation 4 MB (no direct merges).
 */
function slowPeriodic(): { record: DemandRecord; current: Policy } {
  const start = NOW - HOUR / 2;
  const buckets: DemandBucket[] = [];
  for (let t = start, i = 0; t < NOW; t += BUCKET_MS, i++) {
    const seals = i >= 30 && i < 60 ? 20 : 1;
    buckets.push(
      bucket(t, {
        seals,
        sealedBytes: seals * 4_000_000,
        shards: ['s0', 's1'],
        prepare: { merge: fixed(1_000, 2), optimize: fixed(1_000), index: fixed(500), gc: fixed(300) },
        preparedGenerations: 4,
        commit: { merge: fixed(500, 2), optimize: fixed(30_000), index: fixed(20_000), gc: fixed(20_000) },
        wait: { merge: { n: 2, sumMs: 2_000, minMs: 0, maxMs: 2_000 } },
      }),
    );
  }
  const current = simPolicy({
    classes: { merge: 3, optimize: 2, index: 2, gc: 2 },
    periodSecs: { optimize: 5, index: 5, gc: 5 },
    maxTurnWaitSecs: { merge: 600, optimize: 600, index: 600, gc: 600 },
    // Below softBacklog, so merges are not promoted by backlog.
    softBacklog: 10_000,
    hardBacklog: 20_000,
  });
  return { record: { buckets }, current };
}

const input = (record: DemandRecord, current: Policy, proposed: Policy, hours = 0.5): DryRunInput => ({ table: 'orders', shards: ['s0', 's1'], current, proposed, record, nowMs: NOW, hours });

const durationsArb = fc
  .tuple(fc.integer({ min: 1, max: 20 }), fc.integer({ min: 0, max: 5_000 }), fc.integer({ min: 0, max: 5_000 }), fc.double({ min: 0, max: 1, noNaN: true }))
  .map(([n, a, b, at]): Durations => {
    const [minMs, maxMs] = a <= b ? [a, b] : [b, a];
    const mean = minMs + (maxMs - minMs) * at;
    return { n, sumMs: mean * n, minMs, maxMs };
  });

/** Buckets of the last hour, some of them with seals, durations and waits. */
const recordArb = fc
  .array(
    fc.record({
      slot: fc.integer({ min: 0, max: 359 }),
      seals: fc.integer({ min: 0, max: 12 }),
      bytes: fc.constantFrom(0, 10_000, 4_000_000),
      shards: fc.subarray(['s0', 's1', 's2']),
      mergePrepare: fc.option(durationsArb, { nil: undefined }),
      mergeCommit: fc.option(durationsArb, { nil: undefined }),
      optimize: fc.option(durationsArb, { nil: undefined }),
      idle: fc.integer({ min: 0, max: 3 }),
    }),
    { maxLength: 12 },
  )
  .map((bs): DemandRecord => {
    const slots = [...new Map(bs.map((b) => [b.slot, b])).values()].sort((a, b) => a.slot - b.slot);
    return {
      buckets: slots.map((b) =>
        bucket(NOW - HOUR + b.slot * BUCKET_MS, {
          seals: b.seals,
          sealedBytes: b.seals * b.bytes,
          shards: b.seals ? b.shards : [],
          prepare: { ...(b.mergePrepare ? { merge: b.mergePrepare } : {}), ...(b.optimize ? { optimize: b.optimize } : {}) },
          preparedGenerations: b.mergePrepare ? b.mergePrepare.n * 2 : 0,
          idlePrepares: b.optimize ? { optimize: Math.min(b.idle, b.optimize.n) } : {},
          commit: { ...(b.mergeCommit ? { merge: b.mergeCommit } : {}), ...(b.optimize ? { optimize: b.optimize } : {}) },
          wait: b.mergeCommit ? { merge: b.mergeCommit } : {},
        }),
      ),
    };
  });

describe('recorded durations', () => {
  it('a draw stays within the recorded range and its mean is the recorded mean', () => {
    fc.assert(
      fc.property(durationsArb, fc.integer(), (d, seed) => {
        const rng = mulberry32(seed);
        const draws = Array.from({ length: 4_000 }, () => drawDuration(d, rng));
        expect(Math.min(...draws)).toBeGreaterThanOrEqual(Math.floor(d.minMs));
        expect(Math.max(...draws)).toBeLessThanOrEqual(Math.ceil(d.maxMs));
        // Uniform halves: the standard error of 4,000 draws is under 1% of the range.
        const mean = draws.reduce((x, y) => x + y, 0) / draws.length;
        expect(Math.abs(mean - d.sumMs / d.n)).toBeLessThanOrEqual(0.05 * (d.maxMs - d.minMs) + 1);
      }),
      { numRuns: 100 },
    );
  });

  it('a merge preparation costs the recorded time per generation; a bucket without durations falls back to the window, then to defaults', () => {
    const t = NOW - HOUR;
    const { model, sources } = recordedActivities([
      bucket(t, { prepare: { merge: fixed(1_000, 2) }, preparedGenerations: 4, commit: { merge: fixed(200) } }),
      bucket(t + BUCKET_MS, { commit: { merge: fixed(600) } }),
    ]);
    const rng = mulberry32(1);
    // 2 generations per preparation recorded: 500 ms each.
    expect(model.durationMs({ phase: 'prepare', kind: 'merge', generations: 6, atMs: t + 1 }, rng)).toBe(3_000);
    expect(model.durationMs({ phase: 'commit', kind: 'merge', generations: 1, atMs: t + BUCKET_MS + 1 }, rng)).toBe(600);
    // Outside every bucket: the window's (two commits: 200 and 600, so within that range).
    const whole = model.durationMs({ phase: 'commit', kind: 'merge', generations: 1, atMs: NOW + HOUR }, rng);
    expect(whole).toBeGreaterThanOrEqual(200);
    expect(whole).toBeLessThanOrEqual(600);
    // The second bucket recorded no preparation: the window's.
    expect(model.durationMs({ phase: 'prepare', kind: 'merge', generations: 2, atMs: t + BUCKET_MS + 1 }, rng)).toBe(1_000);
    expect(sources.defaulted.commit).toEqual(['optimize', 'index', 'gc']);
    expect(sources.neverPrepared).toEqual(['optimize', 'index', 'gc']);
    expect(model.needsCommit('optimize', t)).toBe(0);
  });

  it('the share of preparations that found nothing comes from idlePrepares', () => {
    const { model } = recordedActivities([bucket(NOW, { prepare: { optimize: fixed(100, 4) }, idlePrepares: { optimize: 3 } })]);
    expect(model.needsCommit('optimize', NOW + 1)).toBe(0.25);
  });
});

describe('seal schedule', () => {
  it('replays every seal of the window once, in time order, within its bucket, round-robin over the shards it names', () => {
    fc.assert(
      fc.property(recordArb, fc.double({ min: 0.1, max: 2, noNaN: true }), (record, hours) => {
        const w = replayWindow(record, NOW, hours);
        const seals = [...sealSchedule(w, ['s0', 's1', 's2', 's3'])];
        expect(seals).toHaveLength(w.buckets.reduce((s, b) => s + b.seals, 0));
        let i = 0;
        for (const b of w.buckets) {
          const mine = seals.slice(i, i + b.seals);
          i += b.seals;
          const shards = b.shards.length ? b.shards : ['s0', 's1', 's2', 's3'];
          mine.forEach((s, j) => {
            expect(s.atMs).toBeGreaterThanOrEqual(b.startMs);
            expect(s.atMs).toBeLessThan(b.endMs);
            expect(s.shard).toBe(shards[j % shards.length]);
            expect(s.bytes).toBe(b.sealedBytes ? Math.round(b.sealedBytes / b.seals) : undefined);
          });
        }
        for (let j = 1; j < seals.length; j++) expect(seals[j]!.atMs).toBeGreaterThanOrEqual(seals[j - 1]!.atMs);
        for (const b of w.buckets) expect(b.endMs > w.fromMs && b.startMs < w.toMs).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});

describe('policy dry run', () => {
  it('is a function of its input: the same record and policies give the same report, and the inputs are left as they were', () => {
    fc.assert(
      fc.property(recordArb, fc.integer({ min: 1, max: 4 }), (record, wait) => {
        const current = simPolicy();
        const proposed = simPolicy({ maxTurnWaitSecs: { ...current.maxTurnWaitSecs, merge: wait } });
        const args = deepFreeze({ ...input(record, current, proposed, 1), seeds: [3, 9] });
        const a = policyDryRun(args);
        const b = policyDryRun(args);
        expect(JSON.stringify(b)).toBe(JSON.stringify(a));
        if (a === null) return;
        // Every seal replayed was merged in the end (nothing here keeps the table from draining).
        for (const r of [...a.current.runs, ...a.proposed.runs]) expect(r.drainSecs).not.toBeNull();
        expect(a.current.runs).toHaveLength(2);
      }),
      { numRuns: 25 },
    );
  });

  it('a lower maxTurnWaitSecs.merge shortens the merges\' longest wait behind slow periodic commits; so does a higher class', () => {
    const { record, current } = slowPeriodic();
    const promoted = policyDryRun(input(record, current, { ...current, maxTurnWaitSecs: { ...current.maxTurnWaitSecs, merge: 5 } }))!;
    expect(promoted.changed).toEqual([{ key: 'maxTurnWaitSecs.merge', from: 600, to: 5 }]);
    // Now: behind optimize, index and gc (20-30 s each) after every merge. Promoted after
    // 5 s, a merge waits at most for the turn being held (<= 30 s) plus the 5 s.
    expect(promoted.current.median.maxWaitSecs.merge!).toBeGreaterThan(60);
    expect(promoted.proposed.max.maxWaitSecs.merge!).toBeLessThanOrEqual(5 + 30 + 1);
    expect(promoted.proposed.median.turns.merge).toBeGreaterThan(promoted.current.median.turns.merge);
    expect(promoted.proposed.median.backlogPeak).toBeLessThan(promoted.current.median.backlogPeak);

    const first = policyDryRun(input(record, current, { ...current, classes: { ...current.classes, merge: 1 } }))!;
    expect(first.proposed.max.maxWaitSecs.merge!).toBeLessThan(first.current.median.maxWaitSecs.merge!);
    expect(first.proposed.median.drainSecs!).toBeLessThan(first.current.median.drainSecs!);
    // What the record observed is reported as it was, whatever the policies.
    expect(first.observed.turns.merge).toBe(360);
    expect(first.observed.maxWaitSecs.merge).toBe(2);
    expect(first.observed.meanWaitSecs.merge).toBe(1);
  });

  it('time to drain: 0 when the backlog was merged before the window ended, else from the end of the window until it is', () => {
    const idleEnd = policyDryRun(input({ buckets: [bucket(NOW - 600_000, { seals: 4, shards: ['s0'], commit: { merge: fixed(100) } })] }, simPolicy(), simPolicy()))!;
    for (const r of idleEnd.current.runs) expect(r.drainSecs).toBe(0);
    // 40 generations of one shard in the last 10 s, and a merge commit takes 60 s: the
    // last generation's merge commits at least 60 s after it was sealed, within the last 10 s.
    const late = bucket(NOW - BUCKET_MS, { seals: 40, sealedBytes: 40 * 4_000_000, shards: ['s0'], commit: { merge: fixed(60_000) } });
    const busy = policyDryRun(input({ buckets: [late] }, simPolicy(), simPolicy()))!;
    for (const r of busy.current.runs) expect(r.drainSecs!).toBeGreaterThanOrEqual(50);
    expect(busy.proposed).toEqual({ ...busy.current, policy: simPolicy() });
  });

  it('an empty window: no report, and the command says so', () => {
    expect(policyDryRun(input({ buckets: [] }, simPolicy(), simPolicy()))).toBeNull();
    // Everything recorded is older than the window.
    expect(policyDryRun(input({ buckets: [bucket(NOW - 2 * HOUR, { seals: 3 })] }, simPolicy(), simPolicy(), 1))).toBeNull();
    expect(noDemandLine(24)).toBe('no recorded demand in the last 24 hours');
    expect(noDemandLine(1)).toBe('no recorded demand in the last 1 hour');
  });

  it('a record that names no shard, of a table whose shards are unknown, still replays every seal', () => {
    const r = policyDryRun({ ...input({ buckets: [bucket(NOW - 60_000, { seals: 3 })] }, simPolicy(), simPolicy()), shards: [] })!;
    expect(r.current.median.turns.merge).toBeGreaterThanOrEqual(1);
    expect(r.current.median.drainSecs).toBe(0);
  });

  it('prints observed, current and proposed side by side within 100 columns', () => {
    const { record, current } = slowPeriodic();
    const text = formatDryRun(policyDryRun(input(record, current, { ...current, maxTurnWaitSecs: { ...current.maxTurnWaitSecs, merge: 5 } }))!);
    for (const line of text.split('\n')) expect(line.length, line).toBeLessThanOrEqual(100);
    expect(text).toMatch(/^\s+observed\s+current policy\s+proposed policy$/m);
    expect(text).toMatch(/^turns\s+merge\s+360\s+\d+ \(\d+\)\s+\d+ \(\d+\)$/m);
    expect(text).toMatch(/^max wait s\s+merge\s+2\.0\s/m);
    expect(text).toContain('proposed: maxTurnWaitSecs.merge 600 -> 5');
    expect(text).toMatch(/^time to drain\s+-\s+\S+/m);
  });
});
