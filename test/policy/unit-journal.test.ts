import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KINDS, type Unit } from '../../src/policy/types';
import { backlogOf } from '../../src/policy/pressure';
import { emptyDemandRecord, MAX_BUCKETS, recordDemand, BUCKET_MS } from '../../src/policy/demand-record';
import { emptyHistory, MAX_ENTRIES, writeAmplification } from '../../src/policy/unit-history';
import { journalActivation, type Journal } from '../../src/policy/unit-journal';
import { runSimulation, type SimConfig } from '../../src/sim';
import { durationsArb, policyArb, yieldToRunner, simPolicy } from './helpers';

// The journal is fed what the workflow shell sees (events, decisions, the state before and
// after) and must agree with the core's own counters and with what the simulator saw.

const COST = { bytesRead: 10, bytesWritten: 7, cpuMs: 1 };

/** Runs the simulator, feeding every step to the journal as the shell does per activation. */
function journalled(cfg: SimConfig): { journal: Journal; sim: ReturnType<typeof runSimulation>; backlogPeak: number } {
  let journal: Journal = { running: {}, history: emptyHistory(0), demand: emptyDemandRecord() };
  let backlogPeak = 0;
  const sim = runSimulation({
    ...cfg,
    onStep: ({ nowMs, event, before, after, decisions }) => {
      // Every activity reports the same cost, and every seal 100 bytes, so totals are countable.
      const ev = event.type === 'prepared' || event.type === 'committed' || event.type === 'commitFailed' ? { ...event, cost: COST } : event.type === 'demand' ? { ...event, bytes: 100 } : event;
      journal = journalActivation(journal, { before, after, events: [ev], decisions, nowMs, reservedBytes: (u: Unit, r: readonly Unit[]) => 1 + r.length });
      backlogPeak = Math.max(backlogPeak, backlogOf(after));
    },
  });
  return { journal, sim, backlogPeak };
}

const busy = (seed: number): SimConfig => ({
  shards: ['s0', 's1'],
  policy: simPolicy({ periodSecs: { optimize: 30, index: 60, gc: 120 }, softBacklog: 50, hardBacklog: 500 }),
  seed,
  endMs: 20 * 60_000,
  prepareMs: { merge: [500, 2_000], optimize: [1_000, 3_000], index: 1_000, gc: 500 },
  commitMs: { merge: [300, 1_500], optimize: [5_000, 10_000], index: 3_000, gc: 1_000 },
  mergeMsPerGeneration: 100,
  arrivals: [{ everyMs: [300, 1_500] }],
  optimizeEverySecs: 45,
});

describe('the unit journal', () => {
  it('counts the turns the core counted, with the waits it measured, and the seals the store holds', () => {
    const { journal, sim, backlogPeak } = journalled(busy(3));
    // The backlog rises only with seals, which are recorded: its peak is in the record.
    expect(Math.max(...journal.demand.buckets.map((b) => b.backlogPeak ?? 0))).toBe(backlogPeak);
    expect(backlogPeak).toBeGreaterThan(0);
    const turns = sim.state.counters.turns;
    for (const k of KINDS) {
      const waits = journal.demand.buckets.map((b) => b.wait[k]).filter((d) => d !== undefined);
      // The core counts a turn when it commits: the turn still held at the end is granted, not counted.
      const granted = waits.reduce((s, d) => s + d.n, 0);
      expect(granted - turns[k], k).toBeGreaterThanOrEqual(0);
      expect(granted - turns[k], k).toBeLessThanOrEqual(1);
      const maxMs = Math.max(0, ...waits.map((d) => d.maxMs));
      expect(maxMs / 1000, k).toBeCloseTo(sim.state.counters.maxTurnWaitSecs[k], 3);
      const held = journal.demand.buckets.reduce((s, b) => s + (b.commit[k]?.n ?? 0), 0);
      // Turns still held when the run stopped have not ended.
      expect(turns[k] - held, k).toBeGreaterThanOrEqual(0);
      expect(turns[k] - held, k).toBeLessThanOrEqual(1);
    }
    const seals = journal.demand.buckets.reduce((s, b) => s + b.seals, 0);
    const sealedInStore = Object.values(sim.sealed).reduce((s, n) => s + n, 0);
    // Seals whose demand is still on its way are in the store, not yet in the record.
    expect(seals).toBeLessThanOrEqual(sealedInStore);
    expect(seals).toBeGreaterThan(sealedInStore - 5);
    expect(journal.history.sealedBytes).toBe(seals * 100);
    expect(turns.merge).toBeGreaterThan(100);
    expect(turns.optimize).toBeGreaterThan(5);
  });

  it('keeps one entry per ended turn or idle preparation, and exact totals when entries go', () => {
    const { journal, sim } = journalled(busy(5));
    const committedMerges = journal.history.totals.merge.units;
    expect(committedMerges).toBeGreaterThan(MAX_ENTRIES.merge);
    for (const k of KINDS) expect(journal.history.entries.filter((e) => e.kind === k).length).toBeLessThanOrEqual(MAX_ENTRIES[k]);
    // Grouped merge turns are one entry each: merges counted by the core = entries' lead + riders.
    const mergeEntries = journal.history.entries.filter((e) => e.kind === 'merge' && e.outcome === 'committed');
    for (const e of mergeEntries) {
      expect(e.grantedAtMs).toBeGreaterThanOrEqual(e.readyAtMs ?? e.startedAtMs);
      expect(e.endedAtMs).toBeGreaterThanOrEqual(e.grantedAtMs!);
      expect(e.reservedBytes).toBe(1 + (e.riders?.length ?? 0));
      expect(e.why).not.toBe('');
      // Its preparation and commit, and its riders' preparations.
      expect(e.cpuMs).toBe(1 + 1 + (e.riders?.length ?? 0));
    }
    // Every activity reported COST once: totals count each of them exactly once.
    const units = KINDS.reduce((s, k) => s + journal.history.totals[k].units, 0);
    expect(units).toBeGreaterThan(0);
    expect(writeAmplification(journal.history)).toBeGreaterThan(0);
    expect(sim.state.counters.merges).toBeGreaterThanOrEqual(committedMerges);
  });

  it('stays bounded and never loses a seal or a turn whatever the policy and durations', async () => {
    await fc.assert(
      fc.asyncProperty(policyArb, durationsArb, fc.integer({ min: 0, max: 1_000 }), async (policy, durations, seed) => {
        await yieldToRunner();
        const { journal, sim } = journalled({ ...busy(seed), policy, ...durations, endMs: 5 * 60_000 });
        expect(journal.demand.buckets.length).toBeLessThanOrEqual(MAX_BUCKETS);
        for (const k of KINDS) {
          const granted = journal.demand.buckets.reduce((s, b) => s + (b.wait[k]?.n ?? 0), 0);
          const ended = journal.demand.buckets.reduce((s, b) => s + (b.commit[k]?.n ?? 0), 0);
          expect(granted - sim.state.counters.turns[k]).toBeGreaterThanOrEqual(0);
          expect(granted - ended).toBeLessThanOrEqual(1);
        }
        expect(Object.keys(journal.running).length).toBeLessThanOrEqual(sim.state.units.length + 1);
      }),
      { numRuns: 40 },
    );
  });
});

describe('the demand record', () => {
  it('records nothing when nothing happened (idle tables stay free)', () => {
    const r = emptyDemandRecord();
    expect(recordDemand(r, {}, 5)).toBe(r);
  });

  it('merges the older half when full: counts are kept, recent buckets stay fine', () => {
    let r = emptyDemandRecord();
    const n = 1_000;
    for (let i = 0; i < n; i++) r = recordDemand(r, { seals: [{ shard: 's0', count: 1, bytes: 3 }], grants: [{ kind: 'merge', waitedMs: i }] }, i * BUCKET_MS);
    expect(r.buckets.length).toBeLessThanOrEqual(MAX_BUCKETS);
    expect(r.buckets.reduce((s, b) => s + b.seals, 0)).toBe(n);
    expect(r.buckets.reduce((s, b) => s + b.sealedBytes, 0)).toBe(3 * n);
    expect(Math.max(...r.buckets.map((b) => b.wait.merge!.maxMs))).toBe(n - 1);
    expect(r.buckets[0]!.backlogPeak).toBeUndefined();
    const last = r.buckets[r.buckets.length - 1]!;
    expect(last.endMs - last.startMs).toBe(BUCKET_MS);
    for (let i = 1; i < r.buckets.length; i++) expect(r.buckets[i]!.startMs).toBe(r.buckets[i - 1]!.endMs);
  });
});
