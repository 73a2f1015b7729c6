import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KINDS, type Kind, type PolicyEvent } from '../../src/policy/types';
import { runSimulation, type OperatorAction, type SimConfig, type StepInfo } from '../../src/sim';
import { durationsArb, policyArb, rangeArb } from './helpers';
import { yieldToRunner } from './helpers';
import { checkContract, checkOneHolder, checkPure, checkStable, checkStreak } from './invariants';
import { WaitBound } from './wait-bound';

// Properties 1, 2, 3 and 7 over simulated runs: the simulator plays the workflow shell
// (activities with generated durations and failures, the one timer, operator signals),
// fast-check generates the runs. A failing run replays from its seed.

const MIN = 60_000;
const kindOrNull = fc.constantFrom<Kind | null>(null, ...KINDS);
const faultArb = (fatal: boolean) =>
  fc.record({
    fatal: fatal ? fc.constantFrom(0, 0, 0.02, 0.1) : fc.constant(0),
    retryable: fc.constantFrom(0, 0.05, 0.2, 0.4),
    stalled: fc.constantFrom(0, 0.5),
    retriedAttempts: fc.constantFrom(0, 0.2),
  });

const bumpAt = (horizonMs: number): fc.Arbitrary<OperatorAction> =>
  fc
    .record({
      atMs: fc.integer({ min: 0, max: horizonMs }),
      target: fc.oneof(fc.constantFrom(...KINDS).map((kind) => ({ kind })), fc.constantFrom('merge/s0', 'merge/s1', 'optimize', 'gc').map((unitId) => ({ unitId }))),
      cls: fc.constantFrom(1 as const, 2 as const, 3 as const, 4 as const),
      forMs: fc.integer({ min: 1, max: 10 * MIN }),
    })
    .map(({ atMs, target, cls, forMs }) => ({
      atMs,
      event: (nowMs: number): PolicyEvent => ({ type: 'bump', bump: { target, class: cls, reason: 'test', expiresAtMs: nowMs + forMs } }),
    }));

const pauseAt = (horizonMs: number): fc.Arbitrary<OperatorAction> =>
  fc.record({ atMs: fc.integer({ min: 0, max: horizonMs }), kind: kindOrNull, resume: fc.boolean() }).map(({ atMs, kind, resume }) => ({
    atMs,
    event: { type: resume ? 'resume' : 'pause', kind } as PolicyEvent,
  }));

/** A pause and its resume, both before `untilMs`. */
const pausePair = (untilMs: number): fc.Arbitrary<OperatorAction[]> =>
  fc.record({ a: fc.integer({ min: 0, max: untilMs }), b: fc.integer({ min: 0, max: untilMs }), kind: kindOrNull }).map(({ a, b, kind }) => [
    { atMs: Math.min(a, b), event: { type: 'pause', kind } },
    { atMs: Math.max(a, b) + 1, event: { type: 'resume', kind } },
  ]);

const policyAt = (horizonMs: number): fc.Arbitrary<OperatorAction> =>
  fc.record({ atMs: fc.integer({ min: 0, max: horizonMs }), policy: policyArb }).map(({ atMs, policy }) => ({ atMs, event: { type: 'policyChanged', policy } }));

interface Base {
  seed: number;
  shards: string[];
  policy: SimConfig['policy'];
  durations: { prepareMs: SimConfig['prepareMs']; commitMs: SimConfig['commitMs'] };
  everyMs: [number, number];
  delayMs: [number, number];
  duplicateProb: number;
  optimizeEverySecs: number | undefined;
  needsCommit: number;
  minutes: number;
  scanOnPrepare: boolean;
  /** Generation size the demands report (direct merges when small), or none. */
  bytes: number | undefined;
}

const baseArb: fc.Arbitrary<Base> = fc.record({
  seed: fc.integer(),
  shards: fc.integer({ min: 1, max: 4 }).map((n) => Array.from({ length: n }, (_, i) => `s${i}`)),
  policy: policyArb,
  durations: durationsArb,
  everyMs: rangeArb(500, 15_000) as fc.Arbitrary<[number, number]>,
  delayMs: rangeArb(0, 3_000) as fc.Arbitrary<[number, number]>,
  duplicateProb: fc.constantFrom(0, 0.1, 0.5),
  optimizeEverySecs: fc.option(fc.integer({ min: 5, max: 120 }), { nil: undefined }),
  needsCommit: fc.constantFrom(0.5, 1),
  minutes: fc.integer({ min: 2, max: 8 }),
  scanOnPrepare: fc.boolean(),
  bytes: fc.constantFrom(undefined, 1000, 10_000_000),
});

function config(b: Base, extra: Partial<SimConfig>): SimConfig {
  return {
    seed: b.seed,
    shards: b.shards,
    policy: b.policy,
    endMs: b.minutes * MIN,
    ...b.durations,
    snapshotMs: [50, 2_000],
    scanOnPrepare: b.scanOnPrepare,
    arrivals: [{ everyMs: b.everyMs, deliveryDelayMs: b.delayMs, duplicateProb: b.duplicateProb, ...(b.bytes !== undefined ? { bytesPerGeneration: b.bytes } : {}) }],
    optimizeEverySecs: b.optimizeEverySecs,
    needsCommit: { optimize: b.needsCommit, index: b.needsCommit, gc: b.needsCommit },
    ...extra,
  };
}

const everyStep = (...checks: ((i: StepInfo) => void)[]) => (info: StepInfo) => {
  for (const c of checks) c(info);
};

describe('scheduling properties over simulated runs', () => {
  it('1 and 3: one turn holder, commit only on a free turn, streak limit; step is pure, JSON-safe and idempotent', async () => {
    const arb = baseArb.chain((b) =>
      fc.record({
        b: fc.constant(b),
        ops: fc.array(fc.oneof(bumpAt(b.minutes * MIN), pauseAt(b.minutes * MIN), policyAt(b.minutes * MIN)), { maxLength: 8 }),
        prepareFaults: faultArb(true),
        commitFaults: faultArb(true),
        snapshotFailProb: fc.constantFrom(0, 0.3),
      }),
    );
    let steps = 0;
    await fc.assert(
      fc.asyncProperty(arb, async ({ b, ops, prepareFaults, commitFaults, snapshotFailProb }) => {
        await yieldToRunner();
        let n = 0;
        const r = runSimulation(
          config(b, {
            operator: ops,
            prepareFaults,
            commitFaults,
            snapshotFailProb,
            onStep: (info) => {
              checkOneHolder(info);
              checkStreak(info);
              checkContract(info);
              if (n++ % 5 === 0) {
                checkStable(info);
                checkPure(info);
              }
            },
          }),
        );
        steps += r.steps;
      }),
      { numRuns: 2000 },
    );
    expect(steps).toBeGreaterThan(100_000);
  });

  it('2: a commit-ready unit is granted within maxTurnWaitSecs plus a bounded number of turns', async () => {
    const arb = baseArb.chain((b) =>
      fc.record({
        b: fc.constant(b),
        ops: fc.array(bumpAt(b.minutes * MIN), { maxLength: 5 }),
        prepareFaults: faultArb(true),
      }),
    );
    let beyond = 0;
    await fc.assert(
      fc.asyncProperty(arb, async ({ b, ops, prepareFaults }) => {
        await yieldToRunner();
        const bound = new WaitBound(b.policy);
        runSimulation(config(b, { operator: ops, prepareFaults, onStep: everyStep(checkOneHolder, (i) => bound.onStep(i)) }));
        beyond += bound.beyondPromotion;
      }),
      { numRuns: 2500 },
    );
    // The bound was exercised: many grants came only after promotion.
    expect(beyond).toBeGreaterThan(100);
  });

  it('7: with fair completions every sealed generation is eventually merged', async () => {
    const arb = baseArb.chain((b) =>
      fc.record({
        b: fc.constant(b),
        pauses: fc.array(pausePair(b.minutes * MIN), { maxLength: 3 }),
        ops: fc.array(fc.oneof(bumpAt(b.minutes * MIN), policyAt(b.minutes * MIN)), { maxLength: 4 }),
        prepareFaults: faultArb(false),
        commitFaults: faultArb(false),
      }),
    );
    await fc.assert(
      fc.asyncProperty(arb, async ({ b, pauses, ops, prepareFaults, commitFaults }) => {
        await yieldToRunner();
        const stopMs = b.minutes * MIN;
        const r = runSimulation(
          config(b, {
            endMs: stopMs + 6 * 60 * MIN,
            arrivals: [{ everyMs: b.everyMs, deliveryDelayMs: b.delayMs, duplicateProb: b.duplicateProb, stopMs }],
            operator: [...pauses.flat(), ...ops],
            prepareFaults,
            commitFaults,
            onStep: everyStep(checkOneHolder, checkContract),
            stopWhen: (s, _now, sim) =>
              sim.arrivalsDone && s.shards.every((x) => x.mergedThroughSeq === (sim.sealed[x.shard] ?? 0) && x.sealedThroughSeq === x.mergedThroughSeq),
          }),
        );
        for (const shard of b.shards) {
          const s = r.state.shards.find((x) => x.shard === shard)!;
          expect({ shard, merged: s.mergedThroughSeq, sealed: s.sealedThroughSeq }).toEqual({ shard, merged: r.sealed[shard], sealed: r.sealed[shard] });
        }
        expect(r.state.paused).toBe(false);
      }),
      { numRuns: 2000 },
    );
  });
});
