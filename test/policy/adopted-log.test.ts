import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { emptyLog, MAX_DECISIONS, MAX_SAMPLES, outsideCompactions, recordDecision, recordSample, type AdoptedLog, type MaintenanceDecision } from '../../src/policy/adopted-log';
import type { Observation, PeriodicKind } from '../../src/policy/types';

// The log shadow-report reads (src/policy/adopted-log.ts): bounded, and the compactions
// someone else ran told apart from Turnstile's own.

const decision = (d: Partial<MaintenanceDecision> = {}): MaintenanceDecision => ({
  atMs: 0,
  kind: 'optimize',
  why: 'class 3',
  reason: '40 small fragments of 41',
  predictedBytes: 100,
  version: 1,
  fragments: 41,
  carriedOut: false,
  ...d,
});

const look = (atMs: number, version: number, fragments: number): Observation => ({
  atMs,
  version,
  fragments,
  smallFragments: fragments,
  rows: 10 * version,
  bytes: 1000 * fragments,
  unindexedRows: 0,
  indices: 0,
});

const samples = (log: AdoptedLog, ...looks: [number, number, number][]): AdoptedLog => looks.reduce((l, [t, v, f]) => recordSample(l, look(t, v, f)), log);

describe('recordDecision', () => {
  it('keeps the last MAX_DECISIONS, in order, while the totals count every decision by kind and whether carried out', () => {
    const kinds: PeriodicKind[] = ['optimize', 'index', 'gc'];
    let log = emptyLog(5);
    const n = MAX_DECISIONS * 2 + 17;
    for (let i = 0; i < n; i++) log = recordDecision(log, decision({ atMs: i, kind: kinds[i % 3]!, carriedOut: i % 4 === 0 }));
    expect(log.sinceMs).toBe(5);
    expect(log.decisions).toHaveLength(MAX_DECISIONS);
    expect(log.decisions.map((d) => d.atMs)).toEqual(Array.from({ length: MAX_DECISIONS }, (_, i) => n - MAX_DECISIONS + i));
    for (const [k, kind] of kinds.entries()) {
      const mine = Array.from({ length: n }, (_, i) => i).filter((i) => i % 3 === k);
      expect(log.totals[kind]).toEqual({ decided: mine.length, carriedOut: mine.filter((i) => i % 4 === 0).length });
    }
  });

  it('does not change the log it was given', () => {
    const before = recordDecision(emptyLog(0), decision());
    const copy = JSON.parse(JSON.stringify(before)) as AdoptedLog;
    recordDecision(before, decision({ atMs: 9, carriedOut: true }));
    expect(before).toEqual(copy);
  });
});

describe('recordSample', () => {
  it('skips a look that found the same version and fragment count as the last one kept', () => {
    let log = samples(emptyLog(0), [1, 1, 3], [2, 1, 3], [3, 1, 3]);
    expect(log.samples.map((s) => s.atMs)).toEqual([1]);
    // A new version, or the fragment count changing at the same version (a compaction's look), is kept.
    log = samples(log, [4, 2, 3], [5, 2, 1], [6, 2, 1]);
    expect(log.samples.map((s) => [s.atMs, s.version, s.fragments])).toEqual([
      [1, 1, 3],
      [4, 2, 3],
      [5, 2, 1],
    ]);
    // What a sample keeps of the look.
    expect(log.samples[0]).toEqual({ atMs: 1, version: 1, fragments: 3, smallFragments: 3, rows: 10, bytes: 3000 });
  });

  it('over MAX_SAMPLES: keeps the first and the newest, stays within the bound and sorted by time (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 60_000 }), fc.integer({ min: 0, max: 2 }), fc.integer({ min: -3, max: 3 })), { minLength: 1, maxLength: 1200 }), (steps) => {
        let log = emptyLog(0);
        let t = 0;
        let v = 1;
        let f = 1;
        const kept: Observation[] = [];
        for (const [dt, dv, df] of steps) {
          t += dt;
          v += dv;
          f = Math.max(1, f + df);
          const o = look(t, v, f);
          const last = log.samples.at(-1);
          if (!last || last.version !== v || last.fragments !== f) kept.push(o);
          log = recordSample(log, o);
          expect(log.samples.length).toBeLessThanOrEqual(MAX_SAMPLES);
          expect(log.samples[0]!.atMs).toBe(kept[0]!.atMs);
          expect(log.samples.at(-1)).toMatchObject({ atMs: kept.at(-1)!.atMs, version: kept.at(-1)!.version, fragments: kept.at(-1)!.fragments });
          for (let i = 1; i < log.samples.length; i++) expect(log.samples[i]!.atMs).toBeGreaterThanOrEqual(log.samples[i - 1]!.atMs);
        }
        // Every sample left is one of the looks, none made up or duplicated.
        const at = new Set(kept.map((o) => `${o.atMs}/${o.version}/${o.fragments}`));
        expect(new Set(log.samples.map((s) => `${s.atMs}/${s.version}/${s.fragments}`)).size).toBe(log.samples.length);
        for (const s of log.samples) expect(at.has(`${s.atMs}/${s.version}/${s.fragments}`)).toBe(true);
        if (kept.length <= MAX_SAMPLES) expect(log.samples).toHaveLength(kept.length);
      }),
      { numRuns: 200 },
    );
  });

  it('thinning keeps the recent half whole: the newest MAX_SAMPLES / 2 looks are all there', () => {
    let log = emptyLog(0);
    for (let i = 1; i <= MAX_SAMPLES * 3; i++) log = recordSample(log, look(i, i, 1));
    const newest = log.samples.slice(-MAX_SAMPLES / 2).map((s) => s.atMs);
    expect(newest).toEqual(Array.from({ length: MAX_SAMPLES / 2 }, (_, i) => MAX_SAMPLES * 3 - MAX_SAMPLES / 2 + 1 + i));
  });
});

describe('outsideCompactions', () => {
  it('finds a fall of two or more fragments between looks; a fall of one (an update emptying a fragment) is none', () => {
    const log = samples(emptyLog(0), [1000, 1, 10], [2000, 2, 9], [3000, 3, 12], [4000, 4, 10], [5000, 5, 11], [6000, 6, 2]);
    expect(outsideCompactions(log)).toEqual([
      { atMs: 4000, fragmentsBefore: 12, fragmentsAfter: 10 },
      { atMs: 6000, fragmentsBefore: 11, fragmentsAfter: 2 },
    ]);
  });

  it("ignores a fall into the look a commit of Turnstile's took as it ended", () => {
    const base = samples(emptyLog(0), [1000, 1, 40], [2000, 2, 41]);
    expect(outsideCompactions(recordSample(base, look(3000, 3, 2), true))).toEqual([]);
    expect(outsideCompactions(recordSample(base, look(3000, 3, 2)))).toEqual([{ atMs: 3000, fragmentsBefore: 41, fragmentsAfter: 2 }]);
  });

  it('a decision recorded between the looks explains nothing: only the look after a commit does', () => {
    const base = samples(emptyLog(0), [1000, 1, 40], [2000, 2, 41]);
    for (const carriedOut of [false, true]) {
      const withDecision = recordDecision(base, decision({ kind: 'optimize', atMs: 2500, carriedOut }));
      expect(outsideCompactions(samples(withDecision, [3000, 3, 2])), String(carriedOut)).toEqual([{ atMs: 3000, fragmentsBefore: 41, fragmentsAfter: 2 }]);
    }
  });

  // Thinning drops every other sample of the older half, commits' looks among them: the
  // falls are counted as looks come, so thinning cannot make one someone else's.
  it("when only Turnstile compacts, no compaction is someone else's, however many looks were thinned out (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 1, max: 5 }), fc.boolean()), { minLength: MAX_SAMPLES, maxLength: 3 * MAX_SAMPLES }), (steps) => {
        let log = emptyLog(0);
        let t = 0;
        let v = 1;
        let f = 1;
        for (const [grow, compact] of steps) {
          t += 1000;
          v++;
          if (compact && f >= 3) {
            f = 1;
            log = recordSample(log, look(t, v, f), true);
          } else {
            f += grow;
            log = recordSample(log, look(t, v, f));
          }
          expect(outsideCompactions(log)).toEqual([]);
        }
      }),
      { numRuns: 50 },
    );
  });

  // Looks run beside commits: one that ends after Turnstile's compaction committed, but
  // before its commit's own look is back, finds the fewer fragments first; the commit's
  // look, knowing the version it was decided at, takes that fall back.
  it("a look that saw Turnstile's compaction before the commit's own look came back does not make it someone else's", () => {
    let log = samples(emptyLog(0), [1000, 1, 40], [2000, 2, 41]);
    log = recordSample(log, look(3000, 3, 2));
    expect(outsideCompactions(log)).toHaveLength(1);
    log = recordSample(log, look(3010, 3, 2), { sinceVersion: 2 });
    expect(outsideCompactions(log)).toEqual([]);
    expect(log.outsideTotal).toBe(0);
  });

  it("a compaction of Turnstile's stays its own after MAX_DECISIONS later decisions", () => {
    let log = samples(emptyLog(0), [1000, 1, 40], [2000, 2, 41]);
    log = recordDecision(log, decision({ kind: 'optimize', atMs: 2500, carriedOut: true }));
    log = recordSample(log, look(3000, 3, 2), true);
    expect(outsideCompactions(log)).toEqual([]);
    for (let i = 0; i < MAX_DECISIONS; i++) log = recordDecision(log, decision({ kind: 'index', atMs: 4000 + i, carriedOut: false }));
    expect(outsideCompactions(log)).toEqual([]);
  });
});
