import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defaultPolicy, policySchema } from '../../src/config/policy-schema';
import { addRateSample, CARRIED_FORMAT, carryOver, initialState, parseCarried, rateSample, recordGrants, step, type Carried, type Grant, type RateSample } from '../../src/policy';
import type { PolicyEvent, TableState } from '../../src/policy/types';
import { mulberry32, runSimulation } from '../../src/sim';
import { emptyDemandRecord } from '../../src/policy/demand-record';
import { emptyHistory } from '../../src/policy/unit-history';
import { journalActivation, type Journal } from '../../src/policy/unit-journal';
import { commits, durationsArb, policyArb, rangeArb, simPolicy, stateSample, yieldToRunner } from './helpers';

// The carried state is the contract between releases (src/policy/carried.ts): what a run
// of the previous release handed on at continue-as-new must parse, with nothing it knew
// lost, and what this release carries must come back as it went.

/** Every distinct continue-as-new input in the histories release 0.1.0 recorded. */
const previous = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'carried-0.1.0.json'), 'utf8')) as {
  release: string;
  inputs: { from: string; carried: { state: Record<string, unknown> & Pick<TableState, 'shards' | 'units' | 'counters' | 'version'>; stalled: string[]; rates: RateSample[]; grants: Grant[] } }[];
};

/** What 0.1.0 kept in the state only so runs recorded before some rule replayed as they ran. */
const REPLAY_FLAGS = ['adaptive', 'groupMerges', 'pipelineMerges', 'directMerges', 'deferPullIn', 'lazyPeriodic'];

const parsed = (raw: unknown): Carried => {
  const r = parseCarried(raw);
  if (!r.ok) throw new Error(r.error);
  return r.carried;
};
const json = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

describe('what release 0.1.0 carried', () => {
  it('is at hand: the inputs recorded, each once', () => {
    expect(previous.release).toBe('0.1.0');
    expect(previous.inputs.length).toBeGreaterThanOrEqual(7);
    expect(new Set(previous.inputs.map((i) => JSON.stringify(i.carried))).size).toBe(previous.inputs.length);
  });

  it.each(previous.inputs.map((i) => [i.from, i.carried] as const))('%s parses, and every fact it held survives', (_from, raw) => {
    const c = parsed(raw);
    expect(c.formatVersion).toBe(1);
    // The watermarks, the queue and the counters, one by one ...
    expect(c.state.shards.map((s) => [s.shard, s.sealedThroughSeq, s.sealedRevision, s.mergedThroughSeq, s.heldReason])).toEqual(
      raw.state.shards.map((s) => [s.shard, s.sealedThroughSeq, s.sealedRevision, s.mergedThroughSeq, s.heldReason]),
    );
    expect(c.state.units.length).toBeGreaterThan(0);
    expect(c.state.units).toEqual(raw.state.units);
    for (const u of c.state.units) expect(u.kind === 'merge' && u.prepared?.preparedPath).toMatch(/\.arrow$/);
    expect(c.state.counters).toEqual(raw.state.counters);
    expect(c.state.version).toBe(raw.state.version);
    // ... and everything else too: only the replay flags are gone, and policy keys added
    // since come with their defaults.
    const kept = Object.fromEntries(Object.entries(raw.state).filter(([k]) => !REPLAY_FLAGS.includes(k)));
    const rawPolicy = raw.state.policy as Record<string, unknown>;
    const added = Object.fromEntries(Object.entries(defaultPolicy()).filter(([k]) => !(k in rawPolicy)));
    expect(c.state).toEqual({ ...kept, policy: { ...rawPolicy, ...added } });
    for (const k of REPLAY_FLAGS) expect(k in c.state).toBe(false);
    expect({ stalled: c.stalled, rates: c.rates, grants: c.grants }).toEqual({ stalled: raw.stalled, rates: raw.rates, grants: raw.grants });
  });

  it('a parsed state carries on in the core: its prepared merges go to commit, its watermarks move on from where they were', () => {
    for (const { carried: raw } of previous.inputs) {
      const st = parsed(raw).state;
      const nowMs = Math.max(...st.units.map((u) => u.readySinceMs ?? 0)) + 1;
      const first = step(st, { type: 'timer' }, nowMs);
      const granted = commits(first.decisions)[0]!;
      expect(st.units.map((u) => u.id)).toContain(granted.unit.id);
      const after = step(first.state, { type: 'committed', unitId: granted.unit.id, version: st.version + 1, attempts: 1 }, nowMs + 1).state;
      for (const m of [granted.unit, ...(granted.riders ?? [])]) {
        if (m.kind !== 'merge') continue;
        expect(after.shards.find((s) => s.shard === m.shard)!.mergedThroughSeq).toBe(m.toSeq);
      }
      expect(after.counters.merges).toBe(st.counters.merges + 1 + (granted.riders?.length ?? 0));
    }
  });
});

/** Every distinct continue-as-new input in the histories release 0.3.0 recorded: the previous release. */
const previousRelease = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'carried-0.3.0.json'), 'utf8')) as {
  release: string;
  inputs: { from: string; carried: Carried }[];
};

describe('what release 0.3.0 carried', () => {
  it('is at hand: the inputs recorded, each once, an adopted table among them', () => {
    expect(previousRelease.release).toBe('0.3.0');
    expect(previousRelease.inputs.length).toBeGreaterThanOrEqual(8);
    expect(previousRelease.inputs.some((i) => i.carried.state.adopted !== undefined)).toBe(true);
  });

  it.each(previousRelease.inputs.map((i) => [i.from, i.carried] as const))('%s parses with nothing lost, and no history or demand record yet', (_from, raw) => {
    const c = parsed(raw);
    expect(c.formatVersion).toBe(2);
    expect(c.state).toEqual(raw.state);
    expect({ stalled: c.stalled, rates: c.rates, grants: c.grants, adoptedLog: c.adoptedLog }).toEqual({ stalled: raw.stalled, rates: raw.rates, grants: raw.grants, adoptedLog: raw.adoptedLog });
    expect(c.history).toBeUndefined();
    expect(c.demand).toBeUndefined();
  });
});

describe('the carried-state schema', () => {
  it('what this release carries comes back as it went, over simulated runs (faults, bumps, pauses, turns granted while draining)', async () => {
    const runArb = fc.record({
      seed: fc.integer(),
      shards: fc.integer({ min: 1, max: 3 }).map((n) => Array.from({ length: n }, (_, i) => `s${i}`)),
      // A policy as the workflow holds it: through the policy schema.
      policy: policyArb.map((p) => policySchema.parse(p)),
      durations: durationsArb,
      everyMs: rangeArb(100, 20_000),
      bytes: fc.constantFrom(undefined, 1000),
      fail: fc.constantFrom(0, 0.2),
      pauseAtMs: fc.option(fc.integer({ min: 0, max: 600_000 }), { nil: undefined }),
    });
    await fc.assert(
      fc.asyncProperty(runArb, async (w) => {
        await yieldToRunner();
        let rates: RateSample[] = [];
        let grants: Grant[] = [];
        let journal: Journal = { running: {}, history: emptyHistory(0), demand: emptyDemandRecord() };
        // Checking a state costs ten times a step; runs with fast arrivals take 20,000
        // steps. So every 7th of the first 1,400 steps is checked, and after that a
        // uniform sample of 100 (reservoir sampling): each run checks at most 300 states.
        const sample = stateSample<{ state: TableState; rates: RateSample[]; grants: Grant[] }>(200, 100, 7, mulberry32(w.seed));
        const faults = { retryable: w.fail, fatal: w.fail / 5, stalled: 0.5 };
        runSimulation({
          seed: w.seed,
          shards: w.shards,
          policy: w.policy,
          endMs: 15 * 60_000,
          ...w.durations,
          arrivals: [{ everyMs: w.everyMs, deliveryDelayMs: [0, 500], duplicateProb: 0.05, ...(w.bytes !== undefined ? { bytesPerGeneration: w.bytes } : {}) }],
          optimizeEverySecs: 120,
          prepareFaults: faults,
          commitFaults: faults,
          snapshotFailProb: w.fail,
          scanOnPrepare: true,
          operator: [
            { atMs: 30_000, event: (nowMs: number): PolicyEvent => ({ type: 'bump', bump: { target: { kind: 'gc' }, class: 1, reason: 'test', expiresAtMs: nowMs + 60_000 } }) },
            ...(w.pauseAtMs !== undefined ? [{ atMs: w.pauseAtMs, event: { type: 'pause' as const, kind: 'merge' as const } }] : []),
          ],
          onStep: ({ before, event, after, decisions, nowMs }) => {
            rates = addRateSample(rates, rateSample(after, nowMs));
            grants = recordGrants(grants, decisions, nowMs);
            const cost = { bytesRead: 5, bytesWritten: 3, cpuMs: 0.5 };
            const ev = event.type === 'prepared' || event.type === 'committed' ? { ...event, cost } : event;
            journal = journalActivation(journal, { before, after, events: [ev], decisions, nowMs, reservedBytes: () => 7 });
            sample.offer({ state: after, rates, grants });
          },
        });
        for (const { state: after, rates, grants } of sample.taken()) {
          const stalled = after.units.filter((u) => u.lastError?.startsWith('stalled') === true).map((u) => u.id);
          // As the workflow hands it on (carryOver), and as the state stands mid-run (a turn held).
          for (const state of [carryOver(after), after]) {
            const carried: Carried = json({ formatVersion: CARRIED_FORMAT, state, stalled, rates, grants });
            const r = parseCarried(carried);
            if (!r.ok) throw new Error(r.error);
            expect(r.carried).toEqual(carried);
          }
        }
        // The unit history and demand record as the run ends (parsing them at every step
        // would make the property too slow for a loaded machine).
        const carried: Carried = json({ formatVersion: CARRIED_FORMAT, state: carryOver(initialState({ table: 't', key: 'id', shards: w.shards, policy: w.policy, nowMs: 0 })), stalled: [], rates: [], grants: [], history: journal.history, demand: journal.demand });
        expect(parsed(carried)).toEqual(carried);
      }),
      { numRuns: 60 },
    );
  });

  it('the plans optimize, index and gc hand to their commits come back as they went, whatever else the activities put in them', () => {
    const s = carryOver(initialState({ table: 't', key: 'id', shards: ['s0'], policy: policySchema.parse({}), nowMs: 0 }));
    const unit = { state: 'ready', createdAtMs: 1, readySinceMs: 2, promotedAtMs: null, notBeforeMs: null, commitAttempts: 0, reservedBytes: 0, lastError: null, shard: null, fromSeq: null, toSeq: null } as const;
    const state: TableState = {
      ...s,
      units: [
        { ...unit, id: 'optimize', kind: 'optimize', prepared: { needed: true, reason: 'small fragments', numFragments: 9, numSmallFragments: 8, unindexedRows: 0, versionsPastRetention: 2 } },
        { ...unit, id: 'index', kind: 'index', prepared: { missing: [{ column: 'id', type: 'btree' }], configured: 1 } },
        { ...unit, id: 'gc', kind: 'gc', prepared: { files: ['a.arrow'], tempFiles: [] } },
      ],
    };
    const carried = json({ formatVersion: CARRIED_FORMAT, state, stalled: [], rates: [], grants: [] });
    expect(parsed(carried)).toEqual(carried);
    const withMore = json({ ...carried, state: { ...state, units: state.units.map((u) => ({ ...u, prepared: { ...u.prepared, fromANewerActivity: 1 } })) } });
    expect(parsed(withMore)).toEqual(withMore);
  });

  it('a state without what a release before may have lacked gets defaults: new policy keys, the short snapshot period, periodic kinds once more', () => {
    const s = carryOver(initialState({ table: 't', key: 'id', shards: ['s0'], policy: policySchema.parse({}), nowMs: 0 }));
    const { snapshotEverySecs: _s, periodic: _p, ...old } = s;
    const { snapshotMaxIntervalSecs: _m, periodicWhenIdle: _w, commitAdmissionWaitSecs: _c, ...oldPolicy } = s.policy;
    const c = parsed(json({ state: { ...old, policy: { ...oldPolicy, periodSecs: { optimize: 30 } } } }));
    expect(c.formatVersion).toBe(1);
    expect(c.state.policy).toEqual({ ...s.policy, periodSecs: { optimize: 30, index: 600, gc: 900 } });
    expect(c.state.snapshotEverySecs).toBe(s.policy.snapshotIntervalSecs);
    expect(c.state.periodic).toEqual({ optimize: { planned: null, done: null }, index: { planned: null, done: null }, gc: { planned: null, done: null } });
    expect({ stalled: c.stalled, rates: c.rates, grants: c.grants }).toEqual({ stalled: [], rates: [], grants: [] });
  });

  it('a newer format (a rollback hands it back) is read as far as this release knows it: keys it does not know are dropped', () => {
    const s = json(carryOver(initialState({ table: 't', key: 'id', shards: ['s0'], policy: policySchema.parse({}), nowMs: 0 })));
    const c = parsed({ formatVersion: CARRIED_FORMAT + 1, state: { ...s, policy: { ...s.policy, someNewKnob: 3 }, someNewField: { a: 1 } }, stalled: [], rates: [], grants: [], more: true });
    expect(c.formatVersion).toBe(CARRIED_FORMAT + 1);
    expect(c.state).toEqual(s);
  });

  it('what cannot be a carried state is refused with the path of the first problem, never thrown', () => {
    const s = json(carryOver(initialState({ table: 't', key: 'id', shards: ['s0'], policy: simPolicy(), nowMs: 0 })));
    const refused = (raw: unknown) => {
      const r = parseCarried(raw);
      return r.ok ? 'parsed' : r.error;
    };
    expect(refused(null)).toMatch(/^carried state: \(root\): /);
    expect(refused({ state: { ...s, shards: [{ ...s.shards[0], mergedThroughSeq: -1 }] } })).toMatch(/^carried state: state\.shards\.0\.mergedThroughSeq: /);
    expect(refused({ state: { ...s, units: [{ id: 'x', kind: 'compact' }] } })).toMatch(/^carried state: state\.units\.0\.kind: /);
    expect(refused({ formatVersion: 0, state: s })).toMatch(/^carried state: formatVersion: /);
    expect(refused({ state: { ...s, policy: { ...s.policy, hardBacklog: 1 } } })).toMatch(/^carried state: state\.policy\.hardBacklog: /);
    fc.assert(
      fc.property(fc.anything(), (raw) => {
        expect(() => parseCarried(raw)).not.toThrow();
        expect(() => parseCarried({ state: raw })).not.toThrow();
      }),
    );
  });
});
