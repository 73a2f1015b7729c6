import { describe, expect, it } from 'vitest';
import { formatShadowReport, shadowReport } from '../../src/cli/shadow-report';
import { emptyLog, MAX_DECISIONS, recordDecision, recordSample, type AdoptedLog, type MaintenanceDecision } from '../../src/policy/adopted-log';
import type { Observation, PeriodicKind } from '../../src/policy/types';
import type { LanceTable } from '../../src/storage/lance-table';
import type { StatusView } from '../../workflows/messages';

// shadow-report's numbers (src/cli/shadow-report.ts), from a log and a table faked to
// known values: what each field says it counts.

const NOW = 1_800_000_000_000;

const look = (atMs: number, version: number, fragments: number): Observation => ({ atMs, version, fragments, smallFragments: fragments, rows: 100, bytes: 1000, unindexedRows: 0, indices: 0 });
const decision = (atMs: number, kind: PeriodicKind, predictedBytes: number, carriedOut: boolean): MaintenanceDecision => ({
  atMs,
  kind,
  why: 'class 3',
  reason: `${kind} plan`,
  predictedBytes,
  version: 1,
  fragments: 1,
  carriedOut,
});

function fakeTable(version: number, versionsAgoSecs: number[], fragments = 3): LanceTable {
  return {
    version: async () => version,
    stats: async () => ({ numRows: 500, totalBytes: 5 * 2 ** 20, fragmentStats: { numFragments: fragments, numSmallFragments: 2 } }),
    listVersions: async () => versionsAgoSecs.map((s, i) => ({ version: version - i, timestamp: new Date(NOW - s * 1000), metadata: {} })),
  } as unknown as LanceTable;
}

const viewOf = (log: AdoptedLog, conflicts?: number): StatusView =>
  ({ table: 'events', adopted: { uri: '/data/events.lance', mode: 'active', observed: null }, adoptedLog: log, counters: conflicts === undefined ? {} : { commitConflicts: conflicts } }) as unknown as StatusView;

describe('shadowReport', () => {
  it("counts from the log and the table as they are now: commits since the first look, Turnstile's, fragments over the looks, versions, outside compactions", async () => {
    let log = emptyLog(NOW - 3_600_000);
    log = recordSample(log, look(NOW - 3_000_000, 10, 30));
    log = recordSample(log, look(NOW - 2_000_000, 12, 40));
    log = recordDecision(log, decision(NOW - 1_900_000, 'optimize', 700, true));
    log = recordSample(log, look(NOW - 1_800_000, 13, 1), true);
    log = recordSample(log, look(NOW - 1_000_000, 15, 9));
    log = recordSample(log, look(NOW - 900_000, 16, 2));
    log = recordDecision(log, decision(NOW - 500_000, 'index', 0, true));
    log = recordDecision(log, decision(NOW - 400_000, 'gc', 300, false));
    log = recordDecision(log, decision(NOW - 300_000, 'optimize', 50, false));
    const r = await shadowReport(viewOf(log, 4), fakeTable(20, [1, 50, 100]), NOW);
    expect(r).toMatchObject({ table: 'events', uri: '/data/events.lance', mode: 'active', sinceMs: NOW - 3_600_000, nowMs: NOW });
    expect(r.table_).toEqual({
      version: 20,
      commitsSinceFirstLook: 10,
      turnstileCommits: 2,
      versionsKept: 3,
      oldestVersionAgeSecs: 100,
      fragments: 3,
      smallFragments: 2,
      fragmentsMax: 40,
      fragmentsMin: 1,
      rows: 500,
      bytes: 5 * 2 ** 20,
      // 40 -> 1 was Turnstile's commit; 9 -> 2 was not.
      outsideCompactions: 1,
    });
    expect(r.turnstile.perKind).toEqual({
      optimize: { decided: 2, carriedOut: 1, recent: 2, predictedBytesRecent: 750 },
      index: { decided: 1, carriedOut: 1, recent: 1, predictedBytesRecent: 0 },
      gc: { decided: 1, carriedOut: 0, recent: 1, predictedBytesRecent: 300 },
    });
    expect(r.turnstile.commitConflicts).toBe(4);
    expect(r.turnstile.recent.map((d) => d.kind)).toEqual(['optimize', 'index', 'gc', 'optimize']);
  });

  it('a log with no looks yet: nothing since the first look, fragments from the table alone, no conflicts counted', async () => {
    const r = await shadowReport(viewOf(emptyLog(NOW)), fakeTable(7, [5], 4), NOW);
    expect(r.table_).toMatchObject({ version: 7, commitsSinceFirstLook: 0, turnstileCommits: 0, fragmentsMax: 4, fragmentsMin: 4, versionsKept: 1, oldestVersionAgeSecs: 5, outsideCompactions: 0 });
    expect(r.turnstile.commitConflicts).toBe(0);
    expect(r.turnstile.recent).toEqual([]);
  });

  it('recent holds the last ten decisions', async () => {
    let log = emptyLog(NOW);
    for (let i = 0; i < 25; i++) log = recordDecision(log, decision(NOW - 25_000 + i * 1000, 'optimize', i, false));
    const r = await shadowReport(viewOf(log), fakeTable(1, [1]), NOW);
    expect(r.turnstile.recent.map((d) => d.predictedBytes)).toEqual([15, 16, 17, 18, 19, 20, 21, 22, 23, 24]);
  });
});

describe('formatShadowReport', () => {
  it('says "would have run" in shadow mode and "ran" in active mode, one line per kind, and the recent decisions', async () => {
    let log = emptyLog(NOW - 600_000);
    log = recordDecision(log, decision(NOW - 60_000, 'optimize', 3 * 2 ** 20, false));
    const r = await shadowReport(viewOf(log), fakeTable(3, [1]), NOW);
    const bytes = (n: number) => `${n} B`;
    const active = formatShadowReport(r, bytes);
    expect(active.split('\n')[0]).toBe(`table events (/data/events.lance), mode active, log since ${new Date(NOW - 600_000).toISOString()} (10 min)`);
    expect(active).toContain('\nTurnstile ran:\n');
    expect(formatShadowReport({ ...r, mode: 'shadow' }, bytes)).toContain('\nTurnstile would have run:\n');
    expect(active).toMatch(/^ {2}optimize decided 1, carried out 0; predicted rewrite of the last 1: 3145728 B$/m);
    expect(active).toMatch(/^ {2}index {4}decided 0, carried out 0; predicted rewrite of the last 0: 0 B$/m);
    expect(active).toContain(`  ${new Date(NOW - 60_000).toISOString()}  optimize shadow  optimize plan  (class 3)`);
  });

  // The per-kind bytes are summed over that kind's decisions among the last
  // MAX_DECISIONS of all kinds, but the line names min(decided, 100) of that kind.
  it('the per-kind line names how many decisions its predicted bytes add up', async () => {
    let log = emptyLog(NOW - 600_000);
    for (let i = 0; i < 150; i++) log = recordDecision(log, decision(NOW - 500_000 + i, 'optimize', 10, false));
    for (let i = 0; i < 80; i++) log = recordDecision(log, decision(NOW - 300_000 + i, 'index', 0, false));
    expect(log.decisions.filter((d) => d.kind === 'optimize')).toHaveLength(MAX_DECISIONS - 80);
    const r = await shadowReport(viewOf(log), fakeTable(3, [1]), NOW);
    expect(r.turnstile.perKind.optimize.predictedBytesRecent).toBe(10 * (MAX_DECISIONS - 80));
    expect(formatShadowReport(r, (n) => `${n} B`)).toMatch(/optimize decided 150, carried out 0; predicted rewrite of the last 20: 200 B/);
  });
});
