import { statusView } from '../../src/policy/status';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyOverride, ADOPTED_POLICY, defaultPolicy } from '../../src/config/policy-schema';
import { ADOPTED_DEFAULTS, adoptedWants, CARRIED_FORMAT, carryOver, criteria, initialState, parseCarried, step, type Carried } from '../../src/policy';
import { foldObservation } from '../../src/policy/adopted';
import { emptyLog, recordDecision, recordSample, type AdoptedLog } from '../../src/policy/adopted-log';
import { hasChanged } from '../../src/policy/idle';
import { cloneState } from '../../src/policy/clone';
import type { Decision, Observation, PeriodicKind, Policy, PolicyEvent, TableState } from '../../src/policy/types';
import { checkContract, checkOneHolder, checkStable, ensure, isJson } from './invariants';
import { commits, Driver, prepares, quietTable, simPolicy, wakeAts, yieldToRunner } from './helpers';

// Adopted tables in the core (src/policy/adopted.ts): looks at the table are its demand,
// and optimize, index and gc are wanted by what the latest look found crossing the
// policy's criteria, not by merges.

const URI = '/data/a.lance';
const SEC = 1000;

/** An adopted table with the periods and snapshot intervals `table adopt` gives it. */
function adoptedTable(over: Partial<Policy> = {}, nowMs = 0): TableState {
  const policy = simPolicy({ snapshotIntervalSecs: 5, snapshotMaxIntervalSecs: 120, periodSecs: { optimize: 10, index: 60, gc: 60 }, ...over });
  return initialState({ table: 'a', key: '', shards: [], policy, nowMs, adoptedUri: URI });
}

const look = (o: Partial<Observation> = {}): Observation => ({
  atMs: 0,
  version: 1,
  rows: 1000,
  bytes: 1_000_000,
  fragments: 10,
  smallFragments: 0,
  unindexedRows: 0,
  indices: 0,
  ...o,
});

/** The state as a look found the table (what the 'observed' event folds in). */
function seen(s: TableState, o: Partial<Observation>): TableState {
  const st = cloneState(s);
  foldObservation(st, look(o), 0);
  return st;
}

const observed = (o: Partial<Observation>): PolicyEvent => ({ type: 'observed', observation: look(o) });
const snapshots = (ds: Decision[]) => ds.filter((d) => d.type === 'snapshot').length;

describe('adoptedWants: each kind against its criterion', () => {
  it('optimize: from exactly compactAtSmallFragments small fragments on (the default when the policy lacks the key)', () => {
    for (const at of [2, 5, 1000]) {
      const s = adoptedTable({ compactAtSmallFragments: at });
      expect(adoptedWants(seen(s, { smallFragments: at - 1, fragments: at }), 'optimize')).toBe(false);
      expect(adoptedWants(seen(s, { smallFragments: at, fragments: at }), 'optimize')).toBe(true);
      expect(adoptedWants(seen(s, { smallFragments: at + 1, fragments: at + 1 }), 'optimize')).toBe(true);
    }
    const d = adoptedTable();
    expect(d.policy.compactAtSmallFragments).toBeUndefined();
    expect(criteria(d.policy).compactAtSmallFragments).toBe(ADOPTED_DEFAULTS.compactAtSmallFragments);
    expect(adoptedWants(seen(d, { smallFragments: ADOPTED_DEFAULTS.compactAtSmallFragments - 1, fragments: 50 }), 'optimize')).toBe(false);
    expect(adoptedWants(seen(d, { smallFragments: ADOPTED_DEFAULTS.compactAtSmallFragments, fragments: 50 }), 'optimize')).toBe(true);
  });

  it('index: from exactly indexAtUnindexedShare of the rows unindexed on, only when the table has an index and some row is unindexed', () => {
    const s = adoptedTable({ indexAtUnindexedShare: 0.1 });
    expect(adoptedWants(seen(s, { rows: 1000, unindexedRows: 99, indices: 1 }), 'index')).toBe(false);
    expect(adoptedWants(seen(s, { rows: 1000, unindexedRows: 100, indices: 1 }), 'index')).toBe(true);
    // No index: nothing to refresh however many rows are new.
    expect(adoptedWants(seen(s, { rows: 1000, unindexedRows: 1000, indices: 0 }), 'index')).toBe(false);
    // A share of 0 still wants at least one unindexed row.
    const zero = adoptedTable({ indexAtUnindexedShare: 0 });
    expect(adoptedWants(seen(zero, { rows: 1000, unindexedRows: 0, indices: 2 }), 'index')).toBe(false);
    expect(adoptedWants(seen(zero, { rows: 1000, unindexedRows: 1, indices: 2 }), 'index')).toBe(true);
    expect(adoptedWants(seen(zero, { rows: 0, unindexedRows: 0, indices: 1 }), 'index')).toBe(false);
    // The default share.
    const d = adoptedTable();
    expect(adoptedWants(seen(d, { rows: 1000, unindexedRows: 1000 * ADOPTED_DEFAULTS.indexAtUnindexedShare - 1, indices: 1 }), 'index')).toBe(false);
    expect(adoptedWants(seen(d, { rows: 1000, unindexedRows: 1000 * ADOPTED_DEFAULTS.indexAtUnindexedShare, indices: 1 }), 'index')).toBe(true);
  });

  it('index: the boundary is exact for every share of two decimals (k unindexed of n rows, k/n equal to the share)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 99 }), fc.integer({ min: 1, max: 1000 }), (hundredths, hundreds) => {
        // The share as it is written in a policy file, e.g. 0.07.
        const share = Number(`0.${String(hundredths).padStart(2, '0')}`);
        const rows = hundreds * 100;
        const atShare = hundredths * hundreds;
        const s = adoptedTable({ indexAtUnindexedShare: share });
        expect(adoptedWants(seen(s, { rows, unindexedRows: atShare, indices: 1 }), 'index')).toBe(true);
        expect(adoptedWants(seen(s, { rows, unindexedRows: atShare - 1, indices: 1 }), 'index')).toBe(false);
      }),
      { numRuns: 2000 },
    );
  });

  it('gc: whenever the version moved since its last run', () => {
    const s = seen(adoptedTable(), { version: 7 });
    s.periodic.gc.done = 7;
    expect(adoptedWants(s, 'gc')).toBe(false);
    s.periodic.gc.done = 6;
    expect(adoptedWants(s, 'gc')).toBe(true);
  });

  // An adopted table has no shards: its gc mark is the version (idle.ts, changeMark), so
  // a run that covered the version is not planned again until the version moves.
  it('gc: a run that covered the version is not planned again while the table stays quiet', () => {
    const d = new Driver(adoptedTable());
    d.send({ type: 'timer' });
    d.send(observed({ version: 7 }));
    const due = d.state.dueAtMs.gc;
    expect(prepares(d.at(due).send({ type: 'timer' })).map((p) => p.unit.id)).toContain('gc');
    // Its plan found fewer old versions than pruneAtVersions: nothing to commit.
    d.send({ type: 'prepared', kind: 'gc', unitId: 'gc', needsCommit: false, prepared: null, attempts: 1 });
    expect(d.unit('gc')).toBeUndefined();
    // The same version, looked at again and again.
    let t = due;
    for (let i = 0; i < 10; i++) {
      t += 60 * SEC;
      d.at(t).send({ type: 'timer' });
      if (d.state.snapshotInFlight) d.send(observed({ version: 7, atMs: t }));
      if (d.unit('gc')?.state === 'preparing') d.send({ type: 'prepared', kind: 'gc', unitId: 'gc', needsCommit: false, prepared: null, attempts: 1 });
    }
    expect(d.decisions.filter((x) => x.type === 'prepare' && x.unit.kind === 'gc')).toHaveLength(1);
  });

  it('nothing before the first look; a bump (done null) forces every kind, looked at or not, crossing or not', () => {
    const s = adoptedTable();
    expect(s.adopted).toEqual({ uri: URI, mode: 'shadow', observed: null });
    for (const k of ['optimize', 'index', 'gc'] as const) {
      expect(adoptedWants(s, k)).toBe(false);
      const bumped = cloneState(s);
      bumped.periodic[k].done = null;
      expect(adoptedWants(bumped, k)).toBe(true);
      const quiet = seen(s, { smallFragments: 0, unindexedRows: 0, indices: 0 });
      quiet.periodic[k].done = null;
      expect(adoptedWants(quiet, k)).toBe(true);
    }
  });

  it('a bump through the core plans the kind at once though the look crosses no criterion', () => {
    const d = new Driver(adoptedTable());
    d.send({ type: 'timer' });
    d.send(observed({ smallFragments: 0 }));
    expect(d.state.units).toEqual([]);
    const ds = d.at(1 * SEC).send({ type: 'bump', bump: { target: { kind: 'optimize' }, class: 1, reason: 'test', expiresAtMs: 60 * SEC } });
    expect(prepares(ds).map((p) => p.unit.id)).toEqual(['optimize']);
  });

  it('a generation table is unaffected: hasChanged follows its change marks whatever the adopted criteria say', () => {
    const g = quietTable({ compactAtSmallFragments: 2, indexAtUnindexedShare: 0, pruneAtVersions: 1 });
    expect(g.adopted).toBeUndefined();
    for (const k of ['optimize', 'index'] as const) {
      g.version = 3;
      g.periodic[k].done = 3;
      expect(hasChanged(g, k)).toBe(false);
      g.version = 4;
      expect(hasChanged(g, k)).toBe(true);
    }
    g.periodic.gc.done = 0;
    expect(hasChanged(g, 'gc')).toBe(false);
    // An observation meant for an adopted table changes nothing in a generation table's facts.
    const r = step(g, observed({ version: 99, smallFragments: 500 }), 0).state;
    expect(r.adopted).toBeUndefined();
    expect(r.version).toBe(4);
    expect(r.activityAtMs).toBe(g.activityAtMs);
  });
});

describe('looks at the table (the observed event)', () => {
  it('sets the version and, when the version is new, the activity time; the same version again is no activity', () => {
    const s = adoptedTable();
    const a = step(s, { type: 'observed', observation: look({ version: 4, atMs: 100 }) }, 100).state;
    expect(a.version).toBe(4);
    expect(a.adopted!.observed).toEqual(look({ version: 4, atMs: 100 }));
    expect(a.activityAtMs).toBe(100);
    const b = step(a, { type: 'observed', observation: look({ version: 4, atMs: 900, rows: 1000 }) }, 900).state;
    expect(b.activityAtMs).toBe(100);
    expect(b.adopted!.observed!.atMs).toBe(900);
    const c = step(b, { type: 'observed', observation: look({ version: 5, atMs: 1200 }) }, 1200).state;
    expect(c.version).toBe(5);
    expect(c.activityAtMs).toBe(1200);
  });

  it('a new version brings the next look to snapshotIntervalSecs; quiet looks double it up to snapshotMaxIntervalSecs; a failed one keeps it', () => {
    const d = new Driver(adoptedTable());
    expect(snapshots(d.send({ type: 'timer' }))).toBe(1);
    let version = 1;
    const periods: number[] = [];
    const lookAt = (t: number, v: number) => {
      d.at(t).send(observed({ version: v, atMs: t }));
      periods.push((d.state.dueAtMs.snapshot - t) / SEC);
      expect(d.state.snapshotInFlight).toBe(false);
    };
    lookAt(0, version);
    for (let i = 0; i < 7; i++) {
      const t = d.state.dueAtMs.snapshot;
      expect(snapshots(d.at(t).send({ type: 'timer' }))).toBe(1);
      lookAt(t, version);
    }
    expect(periods).toEqual([5, 10, 20, 40, 80, 120, 120, 120]);
    const t = d.state.dueAtMs.snapshot;
    d.at(t).send({ type: 'timer' });
    lookAt(t, ++version);
    expect(periods.at(-1)).toBe(5);
    const t2 = d.state.dueAtMs.snapshot;
    d.at(t2).send({ type: 'timer' });
    lookAt(t2, version);
    expect(periods.at(-1)).toBe(10);
    const t3 = d.state.dueAtMs.snapshot;
    d.at(t3).send({ type: 'timer' });
    d.send({ type: 'observeFailed', error: 'x' });
    expect(d.state.snapshotInFlight).toBe(false);
    expect((d.state.dueAtMs.snapshot - t3) / SEC).toBe(10);
  });

  it('a commit that looked at the table after the latest look replaces it; an older one does not', () => {
    const d = new Driver(adoptedTable({ compactAtSmallFragments: 4 }));
    d.send({ type: 'timer' });
    d.send(observed({ version: 3, smallFragments: 8, atMs: 0 }));
    d.at(10 * SEC).send({ type: 'timer' });
    d.send({ type: 'prepared', kind: 'optimize', unitId: 'optimize', needsCommit: true, prepared: null, attempts: 1 });
    expect(d.state.turn?.unitId).toBe('optimize');
    d.at(11 * SEC).send({ type: 'committed', unitId: 'optimize', version: 4, attempts: 1, observation: look({ version: 4, smallFragments: 1, atMs: 11 * SEC }) });
    expect(d.state.version).toBe(4);
    expect(d.state.adopted!.observed).toMatchObject({ version: 4, smallFragments: 1 });

    const e = new Driver(adoptedTable({ compactAtSmallFragments: 4 }));
    e.send({ type: 'timer' });
    e.send(observed({ version: 3, smallFragments: 8, atMs: 9_500 }));
    e.at(10 * SEC).send({ type: 'timer' });
    e.send({ type: 'prepared', kind: 'optimize', unitId: 'optimize', needsCommit: true, prepared: null, attempts: 1 });
    e.at(11 * SEC).send({ type: 'committed', unitId: 'optimize', version: 4, attempts: 1, observation: look({ version: 4, smallFragments: 1, atMs: 9_000 }) });
    expect(e.state.adopted!.observed).toMatchObject({ version: 3, smallFragments: 8, atMs: 9_500 });
    expect(e.state.version).toBe(4);
  });
});

describe('looks that raced a commit', () => {
  // A look reads the version first and takes its time (atMs) at the end, after the index
  // stats; one running beside a commit can come back after it holding the version
  // before it. Versions only grow, so such a look is ignored.
  it('a look holding an older version than a commit made does not move the version back', () => {
    const d = new Driver(adoptedTable({ compactAtSmallFragments: 4 }));
    d.send({ type: 'timer' });
    d.send(observed({ version: 3, smallFragments: 8, atMs: 0 }));
    d.at(10 * SEC).send({ type: 'timer' });
    d.send({ type: 'prepared', kind: 'optimize', unitId: 'optimize', needsCommit: true, prepared: null, attempts: 1 });
    d.at(11 * SEC).send({ type: 'committed', unitId: 'optimize', version: 4, attempts: 1, observation: look({ version: 4, smallFragments: 1, atMs: 11 * SEC }) });
    expect(d.state.version).toBe(4);
    d.at(11_500).send(observed({ version: 3, smallFragments: 8, atMs: 11_400 }));
    expect(d.state.version).toBe(4);
  });
});

describe('shadow mode in the core', () => {
  it('a commit that changed nothing (shadow) leaves optimize wanted while the look still crosses the criterion, and only then', () => {
    const d = new Driver(adoptedTable({ compactAtSmallFragments: 4 }));
    d.send({ type: 'timer' });
    d.send(observed({ version: 3, smallFragments: 4 }));
    const due = d.state.dueAtMs.optimize;
    const first = d.at(due).send({ type: 'timer' });
    expect(prepares(first).map((p) => p.unit.id)).toEqual(['optimize']);
    const granted = d.send({ type: 'prepared', kind: 'optimize', unitId: 'optimize', needsCommit: true, prepared: null, attempts: 1 });
    expect(commits(granted).map((c) => c.unit.id)).toEqual(['optimize']);
    // What commitOnAdopted reports in shadow mode: the version the table was at.
    d.at(due + 100).send({ type: 'committed', unitId: 'optimize', version: d.state.version, rows: 0, attempts: 1 });
    expect(d.state.turn).toBeNull();
    expect(d.state.counters.turns.optimize).toBe(1);
    expect(d.state.periodic.optimize.done).toBe(3);
    expect(adoptedWants(d.state, 'optimize')).toBe(true);
    const next = d.state.dueAtMs.optimize;
    expect(next).toBe(due + 100 + 10 * SEC);
    expect(prepares(d.at(next).send({ type: 'timer' })).map((p) => p.unit.id)).toEqual(['optimize']);

    // The table was compacted by someone else meanwhile: not wanted any more.
    d.send({ type: 'prepared', kind: 'optimize', unitId: 'optimize', needsCommit: true, prepared: null, attempts: 1 });
    d.at(next + 100).send({ type: 'committed', unitId: 'optimize', version: d.state.version, rows: 0, attempts: 1 });
    d.send(observed({ version: 4, smallFragments: 3 }));
    const after = d.state.dueAtMs.optimize;
    expect(prepares(d.at(after).send({ type: 'timer' })).filter((p) => p.unit.kind === 'optimize')).toEqual([]);
  });

  it('commit conflicts add up from committed and commitFailed; a late duplicate adds nothing', () => {
    const d = new Driver(adoptedTable({ compactAtSmallFragments: 2, commitRetryBaseSecs: 0 }));
    d.send({ type: 'timer' });
    d.send(observed({ version: 3, smallFragments: 5 }));
    const grantOptimize = (t: number) => {
      d.at(t).send({ type: 'timer' });
      if (d.unit('optimize')?.state === 'preparing') d.send({ type: 'prepared', kind: 'optimize', unitId: 'optimize', needsCommit: true, prepared: null, attempts: 1 });
      expect(d.state.turn?.unitId).toBe('optimize');
    };
    expect(d.state.counters.commitConflicts).toBeUndefined();
    // status counts them from 0, so a dashboard or script sees a number before the first race.
    expect(statusView(d.state, 0).counters.commitConflicts).toBe(0);
    grantOptimize(d.state.dueAtMs.optimize);
    d.send({ type: 'commitFailed', unitId: 'optimize', error: 'commit conflict: lost 3 races', retryable: true, stalled: false, conflicts: 3 });
    expect(d.state.counters.commitConflicts).toBe(3);
    grantOptimize(Math.max(d.nowMs, d.unit('optimize')!.notBeforeMs ?? 0));
    d.send({ type: 'committed', unitId: 'optimize', version: 4, attempts: 1, conflicts: 2 });
    expect(d.state.counters.commitConflicts).toBe(5);
    d.send({ type: 'committed', unitId: 'optimize', version: 4, attempts: 1, conflicts: 7 });
    d.send({ type: 'commitFailed', unitId: 'optimize', error: 'late', retryable: true, stalled: false, conflicts: 7 });
    expect(d.state.counters.commitConflicts).toBe(5);
    // No conflicts reported: the counter stays as it was.
    grantOptimize(d.state.dueAtMs.optimize);
    d.send({ type: 'committed', unitId: 'optimize', version: 5, attempts: 1 });
    expect(d.state.counters.commitConflicts).toBe(5);
  });

  it('modeChanged sets the mode, both ways, and counts as activity; a generation table has no mode to set', () => {
    const d = new Driver(adoptedTable());
    d.send({ type: 'timer' });
    d.send(observed({ version: 2 }));
    for (let i = 0; i < 4; i++) {
      const t = d.state.dueAtMs.snapshot;
      d.at(t).send({ type: 'timer' });
      d.send(observed({ version: 2 }));
    }
    expect(d.state.snapshotEverySecs).toBe(80);
    const at = d.nowMs + 1000;
    d.at(at).send({ type: 'modeChanged', mode: 'active' });
    expect(d.state.adopted!.mode).toBe('active');
    expect(d.state.activityAtMs).toBe(at);
    expect(wakeAts(d.last!.decisions)[0]!.atMs).toBe(at + 5 * SEC);
    d.send({ type: 'modeChanged', mode: 'shadow' });
    expect(d.state.adopted!.mode).toBe('shadow');
    const g = step(quietTable(), { type: 'modeChanged', mode: 'active' }, 0).state;
    expect(g.adopted).toBeUndefined();
  });
});

describe('what an adopted table carries across continue-as-new', () => {
  const json = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
  const KINDS_P: PeriodicKind[] = ['optimize', 'index', 'gc'];

  type Act =
    | { t: 'look'; versionUp: number; smallFragments: number; fragmentsMore: number; unindexedRows: number; indices: number }
    | { t: 'lookFailed' }
    | { t: 'plan'; needsCommit: boolean; fails: boolean; stale: string[] }
    | { t: 'commit'; ok: boolean; conflicts: number; withLook: boolean; retryable: boolean; late: boolean }
    | { t: 'mode'; mode: 'shadow' | 'active' }
    | { t: 'bump'; kind: PeriodicKind }
    | { t: 'wait'; ms: number };

  const actArb: fc.Arbitrary<Act> = fc.oneof(
    {
      weight: 3,
      arbitrary: fc.record({
        t: fc.constant('look' as const),
        versionUp: fc.constantFrom(0, 0, 1, 3),
        smallFragments: fc.integer({ min: 0, max: 60 }),
        fragmentsMore: fc.integer({ min: 0, max: 5 }),
        unindexedRows: fc.integer({ min: 0, max: 2000 }),
        indices: fc.integer({ min: 0, max: 3 }),
      }),
    },
    { weight: 1, arbitrary: fc.constant({ t: 'lookFailed' as const }) },
    {
      weight: 4,
      arbitrary: fc.record({ t: fc.constant('plan' as const), needsCommit: fc.boolean(), fails: fc.integer({ min: 0, max: 4 }).map((n) => n === 0), stale: fc.subarray(['id_idx', 'vec_idx']) }),
    },
    {
      weight: 4,
      arbitrary: fc.record({ t: fc.constant('commit' as const), ok: fc.boolean(), conflicts: fc.nat({ max: 9 }), withLook: fc.boolean(), retryable: fc.boolean(), late: fc.boolean() }),
    },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('mode' as const), mode: fc.constantFrom('shadow' as const, 'active' as const) }) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('bump' as const), kind: fc.constantFrom(...KINDS_P) }) },
    { weight: 3, arbitrary: fc.record({ t: fc.constant('wait' as const), ms: fc.constantFrom(100, 2_000, 10_000, 60_000, 300_000) }) },
  );

  /** What the adopted activities hand the core as a plan, in the shape of its kind (workflows/adopted-units.ts). */
  const planOf = (kind: PeriodicKind, stale: string[]): unknown => {
    const plan = { needed: true, reason: '9 small fragments of 10', numFragments: 10, numSmallFragments: 9, unindexedRows: 5, versionsPastRetention: 3, predictedBytes: 900, staleIndices: stale };
    if (kind === 'optimize') return plan;
    if (kind === 'index') return { missing: [], staleIndices: stale, reason: plan.reason };
    return { files: [], tempFiles: [], versionsPastRetention: 3, reason: plan.reason };
  };

  it('any sequence of looks, plans, commits, conflicts and mode changes keeps the state plain JSON and the carried state parses back as it went', async () => {
    const policyArb = fc.record({
      compactAtSmallFragments: fc.integer({ min: 2, max: 40 }),
      indexAtUnindexedShare: fc.constantFrom(0, 0.05, 0.1, 0.5, 1),
      pruneAtVersions: fc.integer({ min: 1, max: 30 }),
    });
    await fc.assert(
      fc.asyncProperty(policyArb, fc.array(actArb, { minLength: 1, maxLength: 80, size: 'max' }), async (over, acts) => {
        await yieldToRunner();
        const checked = applyOverride(defaultPolicy(), { ...ADOPTED_POLICY, ...over });
        if (!checked.ok) throw new Error(checked.error);
        let st = initialState({ table: 'a', key: '', shards: [], policy: checked.policy, nowMs: 0, adoptedUri: URI });
        let nowMs = 0;
        let version = 1;
        let fragments = 1;
        let conflicts = 0;
        let mode: 'shadow' | 'active' = 'shadow';
        let log: AdoptedLog = emptyLog(0);
        const send = (event: PolicyEvent) => {
          const before = st;
          const r = step(st, event, nowMs);
          const info = { nowMs, event, before, after: r.state, decisions: r.decisions };
          checkOneHolder(info);
          checkContract(info);
          checkStable(info);
          ensure(isJson(r.state), 'state is plain JSON', info);
          for (const dec of r.decisions) {
            if (dec.type !== 'commit' || dec.unit.kind === 'merge') continue;
            const obs = r.state.adopted!.observed;
            log = recordDecision(log, { atMs: nowMs, kind: dec.unit.kind, why: dec.why, reason: 'r', predictedBytes: 0, version: r.state.version, fragments: obs?.fragments ?? 0, carriedOut: mode === 'active' });
          }
          st = r.state;
        };
        const lookNow = (a: { smallFragments: number; unindexedRows: number; indices: number }): Observation => ({
          atMs: nowMs,
          version,
          rows: 1000 + version,
          bytes: 10_000 * fragments,
          fragments,
          smallFragments: Math.min(a.smallFragments, fragments),
          smallRows: 10 * Math.min(a.smallFragments, fragments),
          unindexedRows: Math.min(a.unindexedRows, 1000 + version),
          indices: a.indices,
        });
        send({ type: 'timer' });
        for (const a of acts) {
          switch (a.t) {
            case 'look': {
              version += a.versionUp;
              fragments += a.fragmentsMore;
              const o = lookNow(a);
              log = recordSample(log, o);
              send({ type: 'observed', observation: o });
              break;
            }
            case 'lookFailed':
              send({ type: 'observeFailed', error: 'x' });
              break;
            case 'plan': {
              const u = st.units.find((x) => x.state === 'preparing');
              if (!u || u.kind === 'merge') break;
              send(
                a.fails
                  ? { type: 'prepareFailed', unitId: u.id, error: 'x', retryable: true, stalled: false }
                  : ({ type: 'prepared', kind: u.kind, unitId: u.id, needsCommit: a.needsCommit, prepared: planOf(u.kind, a.stale), attempts: 1 } as PolicyEvent),
              );
              break;
            }
            case 'commit': {
              const holder = st.turn?.unitId;
              if (holder === undefined && !a.late) break;
              const unitId = holder ?? 'optimize';
              if (holder !== undefined) conflicts += a.conflicts;
              if (a.ok && mode === 'active') {
                version++;
                fragments = 1;
              }
              const o = a.withLook ? lookNow({ smallFragments: 0, unindexedRows: 0, indices: 1 }) : undefined;
              if (a.ok && o) log = recordSample(log, o, true);
              send(
                a.ok
                  ? { type: 'committed', unitId, version: mode === 'active' ? version : st.version, rows: 0, attempts: 1, conflicts: a.conflicts, ...(o ? { observation: o } : {}) }
                  : { type: 'commitFailed', unitId, error: 'commit conflict', retryable: a.retryable, stalled: false, conflicts: a.conflicts },
              );
              break;
            }
            case 'mode':
              mode = a.mode;
              send({ type: 'modeChanged', mode: a.mode });
              break;
            case 'bump':
              send({ type: 'bump', bump: { target: { kind: a.kind }, class: 1, reason: 'test', expiresAtMs: nowMs + 60_000 } });
              break;
            case 'wait':
              nowMs += a.ms;
              send({ type: 'timer' });
              break;
          }
          expect(st.counters.commitConflicts ?? 0).toBe(conflicts);
          expect(st.adopted!.mode).toBe(mode);
          for (const state of [carryOver(st), st]) {
            const carried: Carried = json({ formatVersion: CARRIED_FORMAT, state, stalled: [], rates: [], grants: [], adoptedLog: log });
            const r = parseCarried(carried);
            if (!r.ok) throw new Error(r.error);
            expect(r.carried).toEqual(carried);
            expect(r.carried.state.adopted).toEqual(st.adopted);
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
