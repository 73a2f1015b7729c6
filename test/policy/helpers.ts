import fc from 'fast-check';
import { initialState, step } from '../../src/policy';
import { BRIEF_COMMIT_MS } from '../../src/policy/brief-turn';
import type { Decision, Kind, Policy, PolicyEvent, StepResult, TableState } from '../../src/policy/types';
import { KINDS } from '../../src/policy/types';
import { simPolicy } from '../../src/sim';
import type { Range } from '../../src/sim';

export { simPolicy };

/**
 * optimize and gc took a second or more on this table last time: when due they run as
 * units of their own instead of riding a merge's turn (src/policy/rides.ts), as tests of
 * their timing and of turn order want them.
 */
export function maintenanceMeasuredSlow(state: TableState): TableState {
  state.lastCommitMs = { optimize: BRIEF_COMMIT_MS, gc: BRIEF_COMMIT_MS };
  return state;
}

/** A table in a quiet state: periodic kinds off, the first snapshot already done. */
export function quietTable(overrides: Partial<Policy> = {}, shards = ['s0', 's1'], nowMs = 0): TableState {
  const policy = simPolicy({ periodSecs: { optimize: 0, index: 0, gc: 0 }, snapshotIntervalSecs: 3600, snapshotMaxIntervalSecs: 900, ...overrides });
  const s = initialState({ table: 't', key: 'id', shards, policy, nowMs });
  // Takes the initial snapshot out of the way so tests see only what they cause.
  const a = step(s, { type: 'timer' }, nowMs).state;
  return step(a, { type: 'snapshot', revision: 0, shards: [] }, nowMs).state;
}

/** Feeds events at given times, returning the last result and every decision. */
export class Driver {
  decisions: Decision[] = [];
  last: StepResult | null = null;
  constructor(public state: TableState, public nowMs = 0) {}

  at(nowMs: number): this {
    this.nowMs = nowMs;
    return this;
  }

  send(event: PolicyEvent): Decision[] {
    const r = step(this.state, event, this.nowMs);
    this.state = r.state;
    this.last = r;
    this.decisions.push(...r.decisions);
    return r.decisions;
  }

  unit(id: string) {
    return this.state.units.find((u) => u.id === id);
  }
}

export const commits = (ds: Decision[]) => ds.filter((d): d is Extract<Decision, { type: 'commit' }> => d.type === 'commit');
export const prepares = (ds: Decision[]) => ds.filter((d): d is Extract<Decision, { type: 'prepare' }> => d.type === 'prepare');
export const wakeAts = (ds: Decision[]) => ds.filter((d): d is Extract<Decision, { type: 'wakeAt' }> => d.type === 'wakeAt');

/** A preparation result; its content is opaque to the core, so it is left null. */
export const prepared = (unitId: string): PolicyEvent => ({ type: 'prepared', kind: kindOf(unitId), unitId, needsCommit: true, prepared: null, attempts: 1 });
function kindOf(unitId: string): Kind {
  const kind = KINDS.find((k) => unitId === k || unitId.startsWith(`${k}/`));
  if (!kind) throw new Error(`${unitId} is not a unit id`);
  return kind;
}
export const committed = (unitId: string, version = 1, rows = 0): PolicyEvent => ({ type: 'committed', unitId, version, rows, attempts: 1 });

export const demand = (shard: string, seq: number, revision = seq) => ({ type: 'demand' as const, shard, sealedThroughSeq: seq, revision });

export function twoMergesReady(overrides: Partial<Policy> = {}): Driver {
  const d = new Driver(quietTable(overrides));
  d.send(demand('s0', 3, 1));
  d.send(demand('s1', 2, 2));
  d.at(1000).send(prepared('merge/s0'));
  d.at(2000).send(prepared('merge/s1'));
  return d;
}

// ---- arbitraries ----

const perKind = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<Record<Kind, T>> =>
  fc.record(Object.fromEntries(KINDS.map((k) => [k, arb])) as Record<Kind, fc.Arbitrary<T>>);

/** Valid policies (the ranges of src/config/policy-schema.ts, scaled to short simulations). */
export const policyArb: fc.Arbitrary<Policy> = fc
  .record({
    maxConsecutiveTurns: perKind(fc.integer({ min: 1, max: 5 })),
    maxTurnWaitSecs: perKind(fc.integer({ min: 1, max: 120 })),
    classes: perKind(fc.constantFrom(1 as const, 2 as const, 3 as const, 4 as const)),
    basePriority: perKind(fc.integer({ min: 0, max: 20 })),
    agingPerSec: fc.constantFrom(0, 0.05, 0.1, 1),
    softBacklog: fc.integer({ min: 0, max: 40 }),
    span: fc.integer({ min: 1, max: 200 }),
    maxConcurrentPreparations: fc.integer({ min: 1, max: 5 }),
    snapshotIntervalSecs: fc.integer({ min: 5, max: 120 }),
    snapshotMaxIntervalSecs: fc.integer({ min: 1, max: 1200 }),
    periodSecs: fc.record({
      optimize: fc.constantFrom(0, 20, 60, 180),
      index: fc.constantFrom(0, 45, 300),
      gc: fc.constantFrom(0, 90, 600),
    }),
    periodicWhenIdle: fc.boolean(),
    commitRetryBaseSecs: fc.constantFrom(0, 0.5, 1, 3),
    commitRetryMaxSecs: fc.constantFrom(1, 10, 60),
  })
  .map(({ span, ...p }) => simPolicy({ ...p, hardBacklog: p.softBacklog + span }));

export const rangeArb = (lo: number, hi: number): fc.Arbitrary<Range> =>
  fc.tuple(fc.integer({ min: lo, max: hi }), fc.integer({ min: 0, max: hi })).map(([a, w]) => [a, a + w] as const);

export const durationsArb = fc.record({
  prepareMs: perKind(rangeArb(1, 8_000)),
  commitMs: perKind(rangeArb(1, 15_000)),
});

/**
 * Long property runs are synchronous; vitest's worker must still answer its runner's
 * RPCs (60 s deadline) or the whole run fails. Each property run yields once first.
 */
export const yieldToRunner = (): Promise<void> => new Promise((r) => setImmediate(r));

/**
 * States offered one by one over a simulated run, of which it keeps every `stride`th of
 * the first `head * stride` and then a uniform sample of `tail` (reservoir sampling), so
 * checks on them cost the same whatever the run's length.
 */
export function stateSample<T>(head: number, tail: number, stride: number, rng: () => number): { offer(item: T): void; taken(): T[] } {
  const first: T[] = [];
  const rest: T[] = [];
  let n = 0;
  let seen = 0;
  return {
    offer(item) {
      if (n++ < head * stride) {
        if ((n - 1) % stride === 0) first.push(item);
        return;
      }
      seen++;
      if (rest.length < tail) rest.push(item);
      else {
        const j = Math.floor(rng() * seen);
        if (j < tail) rest[j] = item;
      }
    },
    taken: () => [...first, ...rest],
  };
}
