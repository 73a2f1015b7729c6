import { describe, expect, it } from 'vitest';
import { initialState } from '../../src/policy';
import type { Decision, Policy, PolicyEvent } from '../../src/policy/types';
import { committed, demand, Driver, maintenanceMeasuredSlow, prepared, prepares, simPolicy, wakeAts } from './helpers';
import { firstPhase } from '../../src/policy/phase';

// The idle-cost rules of src/policy/idle.ts, example by example. The properties over
// simulated runs (lost-signal bound, idle cost) are in idle-properties.test.ts.

const MIN = 60_000;
// The mechanism at a 15 min max; the default (6 h) only stretches the same doubling.
// Its optimize and gc run as units of their own when due: these tests are of when that is.
const fresh = (overrides: Partial<Policy> = {}): Driver =>
  new Driver(maintenanceMeasuredSlow(initialState({ table: 't', key: 'id', shards: ['s0', 's1'], policy: simPolicy({ snapshotIntervalSecs: 60, snapshotMaxIntervalSecs: 900, ...overrides }), nowMs: 0 })));

const snapshots = (ds: Decision[]) => ds.filter((d) => d.type === 'snapshot').length;
const commitsOf = (ds: Decision[]) => ds.flatMap((d) => (d.type === 'commit' ? [d.unit.id] : []));

/** Answers every snapshot the core asks for with `shards`, and fires its timer, until `untilMs`. */
function idleUntil(d: Driver, untilMs: number, shards: { shard: string; sealedThroughSeq: number; revision: number }[] = []): number[] {
  const snapshotAt: number[] = [];
  for (;;) {
    if (d.state.snapshotInFlight) {
      d.send({ type: 'snapshot', revision: 0, shards });
      continue;
    }
    const at = wakeAts(d.last?.decisions ?? []).at(-1)?.atMs ?? null;
    if (at === null || at > untilMs) return snapshotAt;
    if (snapshots(d.at(at).send({ type: 'timer' })) > 0) snapshotAt.push(at);
  }
}

describe('adaptive snapshot period', () => {
  it('a new table scans at once, then every snapshotMaxIntervalSecs while nothing happens', () => {
    const d = fresh();
    expect(snapshots(d.send({ type: 'timer' }))).toBe(1);
    expect(idleUntil(d, 60 * MIN)).toEqual([15 * MIN, 30 * MIN, 45 * MIN, 60 * MIN]);
    expect(d.decisions.filter((x) => x.type === 'prepare')).toEqual([]);
  });

  it('a demand the table already knew (a redelivery, the store sweep) leaves the period as it is', () => {
    const d = fresh();
    d.send({ type: 'timer' });
    idleUntil(d, 20 * MIN);
    d.at(20 * MIN).send(demand('s0', 1));
    d.send({ type: 'prepareFailed', unitId: 'merge/s0', error: 'x', retryable: false, stalled: false });
    const seen = [{ shard: 's0', sealedThroughSeq: 1, revision: 1 }];
    idleUntil(d, 60 * MIN, seen);
    const due = d.state.dueAtMs.snapshot;
    d.at(61 * MIN).send(demand('s0', 1));
    expect(d.state.dueAtMs.snapshot).toBe(due);
    expect(d.state.activityAtMs).toBe(20 * MIN);
    d.at(62 * MIN).send(demand('s0', 2));
    expect(d.state.dueAtMs.snapshot).toBe(63 * MIN);
  });

  it('a demand brings it back to snapshotIntervalSecs, then it doubles up to the max', () => {
    const d = fresh();
    d.send({ type: 'timer' });
    idleUntil(d, 20 * MIN);
    d.at(20 * MIN).send(demand('s0', 1));
    expect(wakeAts(d.last!.decisions)[0]!.atMs).toBe(21 * MIN);
    // The merge it caused is activity too; keep it out of the way to see the doubling alone.
    d.send({ type: 'prepareFailed', unitId: 'merge/s0', error: 'x', retryable: false, stalled: false });
    const seen = [{ shard: 's0', sealedThroughSeq: 1, revision: 1 }];
    const at = idleUntil(d, 60 * MIN, seen).map((t) => (t - 20 * MIN) / 1000);
    expect(at).toEqual([60, 180, 420, 900, 1800]);
  });

  it('a demand whose merge commits in the same instant leaves the next snapshot to that commit: its scan reschedules it, anything else pulls it in', () => {
    // One shard; demands reporting a small size merge directly, granted in the demand's step.
    const quiet = (): Driver => {
      const d = new Driver(initialState({ table: 't', key: 'id', shards: ['s0'], policy: simPolicy({ snapshotIntervalSecs: 60, snapshotMaxIntervalSecs: 900 }), nowMs: 0 }));
      d.send({ type: 'timer' });
      d.send({ type: 'snapshot', revision: 0, shards: [] });
      expect(d.state.dueAtMs.snapshot).toBe(15 * MIN);
      return d;
    };
    const small = (seq: number): PolicyEvent => ({ type: 'demand', shard: 's0', sealedThroughSeq: seq, revision: seq, bytes: 1000 });
    const scan = { revision: 1, shards: [{ shard: 's0', sealedThroughSeq: 1, revision: 1 }] };

    const d = quiet();
    const ds = d.at(5 * MIN).send(small(1));
    expect(ds.some((x) => x.type === 'commit')).toBe(true);
    expect(d.state.dueAtMs.snapshot).toBe(15 * MIN);
    expect(wakeAts(ds)[0]!.atMs).toBe(15 * MIN);
    // A timer meanwhile changes nothing; the commit's scan reschedules (the demand reset the period, the quiet scan doubles it).
    d.at(5 * MIN + 100).send({ type: 'timer' });
    expect(d.state.dueAtMs.snapshot).toBe(15 * MIN);
    d.at(5 * MIN + 200).send({ ...(committed('merge/s0', 2) as Extract<PolicyEvent, { type: 'committed' }>), scan });
    expect(d.state.dueAtMs.snapshot).toBe(5 * MIN + 200 + 120_000);
    expect(d.state.pullInAtMs).toBeUndefined();

    // The commit fails (no scan): the snapshot comes snapshotIntervalSecs after the demand.
    const f = quiet();
    f.at(5 * MIN).send(small(1));
    f.at(5 * MIN + 200).send({ type: 'commitFailed', unitId: 'merge/s0', error: 'x', retryable: true, stalled: false });
    expect(f.state.dueAtMs.snapshot).toBe(6 * MIN);

    // Newer activity while the commit runs: the commit began before it, so it is pulled in.
    const n = quiet();
    n.at(5 * MIN).send(small(1));
    n.at(5 * MIN + 100).send({ type: 'pause', kind: 'gc' });
    expect(n.state.dueAtMs.snapshot).toBe(6 * MIN);

    // A commit that ends without a scan and hands the turn straight to the next merge
    // (another shard's, waiting since the same instant) does not keep deferring it.
    const c = new Driver(initialState({ table: 't', key: 'id', shards: ['s0', 's1'], policy: simPolicy({ snapshotIntervalSecs: 60, snapshotMaxIntervalSecs: 900 }), nowMs: 0 }));
    c.send({ type: 'timer' });
    c.send({ type: 'snapshot', revision: 0, shards: [] });
    c.at(5 * MIN).send(small(1));
    c.at(5 * MIN).send({ type: 'demand', shard: 's1', sealedThroughSeq: 1, revision: 1, bytes: 1000 });
    expect(c.state.dueAtMs.snapshot).toBe(15 * MIN);
    const next = c.at(5 * MIN + 200).send(committed('merge/s0', 2));
    expect(commitsOf(next)).toEqual(['merge/s1']);
    expect(c.state.dueAtMs.snapshot).toBe(6 * MIN);
  });

  it('a snapshot that finds something new resets the period; a failed one keeps it', () => {
    const d = fresh();
    d.send({ type: 'timer' });
    expect(d.send({ type: 'snapshotFailed', error: 'x' }) && d.state.dueAtMs.snapshot).toBe(15 * MIN);
    d.at(15 * MIN).send({ type: 'timer' });
    d.send({ type: 'snapshot', revision: 3, shards: [{ shard: 's1', sealedThroughSeq: 3, revision: 3 }] });
    expect(d.state.snapshotEverySecs).toBe(60);
    expect(d.state.dueAtMs.snapshot).toBe(16 * MIN);
  });

  it('activity while a scan runs: that scan cannot count as quiet, the next comes after the short period', () => {
    const d = fresh();
    d.send({ type: 'timer' });
    d.at(1000).send(demand('s0', 1));
    expect(d.state.snapshotInFlight).toBe(true);
    d.at(2000).send({ type: 'snapshot', revision: 0, shards: [] });
    expect(d.state.snapshotEverySecs).toBe(60);
    expect(d.state.dueAtMs.snapshot).toBe(62_000);
  });

  it('a merge and operator actions count as activity', () => {
    for (const ev of [
      { type: 'pause', kind: null },
      { type: 'resume', kind: 'gc' },
      { type: 'bump', bump: { target: { kind: 'merge' }, class: 1, reason: 'r', expiresAtMs: 99 * MIN } },
    ] as const) {
      const d = fresh();
      d.send({ type: 'timer' });
      idleUntil(d, 20 * MIN);
      d.at(20 * MIN).send(ev);
      expect(d.state.dueAtMs.snapshot).toBe(21 * MIN);
    }
    const d = fresh();
    d.send({ type: 'timer' });
    d.send({ type: 'snapshot', revision: 0, shards: [] });
    d.send(demand('s0', 1));
    d.at(3 * MIN).send({ type: 'timer' });
    d.send({ type: 'snapshot', revision: 1, shards: [{ shard: 's0', sealedThroughSeq: 1, revision: 1 }] });
    d.at(186_000).send(prepared('merge/s0'));
    expect(d.state.snapshotEverySecs).toBe(120);
    expect(d.state.dueAtMs.snapshot).toBe(300_000);
    d.at(195_000).send(committed('merge/s0', 2));
    expect(d.state.snapshotEverySecs).toBe(60);
    expect(d.state.dueAtMs.snapshot).toBe(255_000);
  });

  /** A merge preparation's result carrying the scan it made on the way out. */
  const preparedWithScan = (unitId: string, shards: { shard: string; sealedThroughSeq: number; revision: number }[]): PolicyEvent => ({
    ...(prepared(unitId) as Extract<PolicyEvent, { type: 'prepared' }>),
    scan: { revision: shards.reduce((n, s) => n + s.revision, 0), shards },
  });

  it('a table merging steadily needs no snapshot activity: each preparation scans on the way out', () => {
    const d = fresh();
    d.send({ type: 'timer' });
    d.send({ type: 'snapshot', revision: 0, shards: [] });
    const before = d.decisions.length;
    for (let seq = 1; seq <= 30; seq++) {
      const t = seq * MIN;
      // Whatever timer is due by then fires first, as it would on a real table.
      const due = wakeAts(d.decisions).at(-1)?.atMs ?? Infinity;
      if (due <= t) d.at(due).send({ type: 'timer' });
      d.at(t).send(demand('s0', seq));
      d.at(t + 1000).send(preparedWithScan('merge/s0', [{ shard: 's0', sealedThroughSeq: seq, revision: seq }, { shard: 's1', sealedThroughSeq: 0, revision: 0 }]));
      d.at(t + 2000).send(committed('merge/s0', seq + 1));
    }
    expect(snapshots(d.decisions.slice(before))).toBe(0);
    // Without the scans (an older worker) the same table scans about once a minute.
    const old = fresh();
    old.send({ type: 'timer' });
    old.send({ type: 'snapshot', revision: 0, shards: [] });
    let scans = 0;
    for (let seq = 1; seq <= 30; seq++) {
      const t = seq * MIN;
      const due = wakeAts(old.decisions).at(-1)?.atMs ?? Infinity;
      if (due <= t) scans += snapshots(old.at(due).send({ type: 'timer' }));
      if (old.state.snapshotInFlight) old.send({ type: 'snapshot', revision: seq - 1, shards: [{ shard: 's0', sealedThroughSeq: seq - 1, revision: seq - 1 }] });
      old.at(t).send(demand('s0', seq));
      old.at(t + 1000).send(prepared('merge/s0'));
      old.at(t + 2000).send(committed('merge/s0', seq + 1));
    }
    expect(scans).toBeGreaterThan(20);
  });

  it("a preparation's scan finds a seal whose signal was lost, and the period goes back to the short one", () => {
    const d = fresh();
    d.send({ type: 'timer' });
    idleUntil(d, 20 * MIN);
    d.at(20 * MIN).send(demand('s0', 1));
    // Another writer sealed s1 seq 1..3 and died before signalling.
    const ds = d.at(20 * MIN + 500).send(preparedWithScan('merge/s0', [{ shard: 's0', sealedThroughSeq: 1, revision: 1 }, { shard: 's1', sealedThroughSeq: 3, revision: 3 }]));
    expect(d.state.shards.find((s) => s.shard === 's1')!.sealedThroughSeq).toBe(3);
    expect(prepares(ds).map((p) => p.unit.id)).toContain('merge/s1');
    expect(d.state.snapshotEverySecs).toBe(60);
    expect(d.state.dueAtMs.snapshot).toBe(21 * MIN + 500);
  });

  it('a scan is not quiet if something happened after its preparation began: the period stays short', () => {
    const d = fresh();
    d.send({ type: 'timer' });
    idleUntil(d, 20 * MIN);
    d.at(20 * MIN).send(demand('s0', 1));
    d.at(20 * MIN + 300).send({ type: 'pause', kind: 'gc' });
    d.at(20 * MIN + 500).send(preparedWithScan('merge/s0', [{ shard: 's0', sealedThroughSeq: 1, revision: 1 }]));
    expect(d.state.dueAtMs.snapshot).toBe(21 * MIN);
    // The same scan with nothing after the preparation began: quiet, so the period doubles.
    const q = fresh();
    q.send({ type: 'timer' });
    idleUntil(q, 20 * MIN);
    q.at(20 * MIN).send(demand('s0', 1));
    q.at(20 * MIN + 500).send(preparedWithScan('merge/s0', [{ shard: 's0', sealedThroughSeq: 1, revision: 1 }]));
    expect(q.state.snapshotEverySecs).toBe(120);
    expect(q.state.dueAtMs.snapshot).toBe(22 * MIN + 500);
  });

  it('a scan that arrives while a snapshot runs leaves the rescheduling to that snapshot', () => {
    const d = fresh();
    d.send({ type: 'timer' });
    d.at(1000).send(demand('s0', 1));
    expect(d.state.snapshotInFlight).toBe(true);
    const due = d.state.dueAtMs.snapshot;
    d.at(1500).send(preparedWithScan('merge/s0', [{ shard: 's0', sealedThroughSeq: 1, revision: 1 }]));
    expect(d.state.dueAtMs.snapshot).toBe(due);
    expect(d.state.snapshotInFlight).toBe(true);
  });

  it('snapshotMaxIntervalSecs below snapshotIntervalSecs means a fixed period', () => {
    const d = fresh({ snapshotIntervalSecs: 120, snapshotMaxIntervalSecs: 30 });
    d.send({ type: 'timer' });
    expect(idleUntil(d, 10 * MIN)).toEqual([2, 4, 6, 8, 10].map((m) => m * MIN));
  });

  it('a lowered max takes effect at once', () => {
    const d = fresh();
    d.send({ type: 'timer' });
    idleUntil(d, 15 * MIN);
    d.at(16 * MIN).send({ type: 'policyChanged', policy: simPolicy({ snapshotIntervalSecs: 60, snapshotMaxIntervalSecs: 60 }) });
    expect(idleUntil(d, 20 * MIN)).toEqual([17, 18, 19, 20].map((m) => m * MIN));
  });
});

describe('optimize, index and gc only after a change', () => {
  /** A table whose shard s0 had one merge committed at `atMs`, making version `version`. */
  function afterOneMerge(overrides: Partial<Policy> = {}, atMs = 10_000, version = 5): Driver {
    const d = fresh(overrides);
    d.send({ type: 'timer' });
    d.send({ type: 'snapshot', revision: 0, shards: [] });
    d.send(demand('s0', 2));
    d.at(atMs - 1).send(prepared('merge/s0'));
    d.at(atMs).send(committed('merge/s0', version));
    return d;
  }

  it('an idle table never prepares them and keeps no timer for them', () => {
    const d = fresh();
    d.send({ type: 'timer' });
    idleUntil(d, 24 * 60 * MIN);
    expect(prepares(d.decisions)).toEqual([]);
    // The only timer is the snapshot's.
    expect(wakeAts(d.last!.decisions)[0]!.atMs).toBe(d.state.dueAtMs.snapshot);
  });

  it('a merge makes all three due at their first due time (within their period), once', () => {
    const d = afterOneMerge();
    expect(d.state.units).toEqual([]);
    const ids = (ds: Decision[]) => prepares(ds).map((p) => p.unit.id);
    const dues = (['optimize', 'index', 'gc'] as const).map((k) => ({ k, at: d.state.dueAtMs[k] })).sort((a, b) => a.at - b.at);
    for (const { k, at } of dues) {
      expect(at).toBeLessThanOrEqual(d.state.policy.periodSecs[k] * 1000);
      // Not a moment before it is due, then at once.
      if (at - 1 > d.nowMs) expect(ids(d.at(at - 1).send({ type: 'timer' }))).toEqual([]);
      expect(ids(d.at(at).send({ type: 'timer' }))).toEqual([k]);
      d.send({ type: 'prepared', kind: k, unitId: k, needsCommit: false, prepared: null, attempts: 1 });
      // The next run of the kind: a period after this one finished.
      expect(d.state.dueAtMs[k]).toBe(d.nowMs + d.state.policy.periodSecs[k] * 1000);
    }
    const before = d.decisions.length;
    idleUntil(d, 6 * 60 * MIN, [{ shard: 's0', sealedThroughSeq: 2, revision: 2 }]);
    expect(prepares(d.decisions.slice(before))).toEqual([]);
  });

  it('a kind whose period passed while nothing changed falls due at its own point of a period after the change, not at once', () => {
    const d = fresh();
    d.send({ type: 'timer' });
    idleUntil(d, 60 * MIN);
    d.at(61 * MIN).send(demand('s0', 1));
    d.send(prepared('merge/s0'));
    const ds = d.send(committed('merge/s0', 3));
    expect(prepares(ds)).toEqual([]);
    const commitAt = d.nowMs;
    const ids = (x: Decision[]) => prepares(x).map((p) => p.unit.id);
    const dues = (['optimize', 'index', 'gc'] as const).map((k) => ({ k, at: d.state.dueAtMs[k] })).sort((a, b) => a.at - b.at);
    for (const { k, at } of dues) {
      // The phase a new table's first run has: the same point of the period for every table of that name.
      expect(at).toBe(commitAt + Math.ceil(d.state.policy.periodSecs[k] * 1000 * firstPhase('t', k)));
      expect(ids(d.at(at).send({ type: 'timer' }))).toEqual([k]);
    }
  });

  it("an optimize or index commit gives neither of the two new work; a merge during optimize's plan does", () => {
    // The merge before either kind's first due time, so both fall due at it (60 s).
    const d = afterOneMerge({ periodSecs: { optimize: 60, index: 60, gc: 0 } }, 5_000, 5);
    d.at(60_000).send({ type: 'timer' });
    d.send({ type: 'prepared', kind: 'optimize', unitId: 'optimize', needsCommit: true, prepared: null, attempts: 1 });
    d.send({ type: 'prepared', kind: 'index', unitId: 'index', needsCommit: true, prepared: null, attempts: 1 });
    d.at(61_000).send(committed(d.state.turn!.unitId, 6));
    d.at(62_000).send(committed(d.state.turn!.unitId, 7));
    expect(d.state.periodic.optimize.done).toBe(7);
    expect(d.state.periodic.index.done).toBe(7);
    const before = d.decisions.length;
    idleUntil(d, 30 * MIN, [{ shard: 's0', sealedThroughSeq: 2, revision: 2 }]);
    expect(prepares(d.decisions.slice(before))).toEqual([]);

    // optimize plans at version 7; a merge commits version 8 before optimize commits 9:
    // optimize covered it (it works on the table at commit time), index has work.
    d.at(31 * MIN).send({ type: 'bump', bump: { target: { kind: 'optimize' }, class: 1, reason: 'r', expiresAtMs: 40 * MIN } });
    d.send(demand('s1', 1));
    d.send(prepared('merge/s1'));
    d.send({ type: 'prepared', kind: 'optimize', unitId: 'optimize', needsCommit: true, prepared: null, attempts: 1 });
    expect(d.state.turn?.unitId).toBe('merge/s1');
    d.at(32 * MIN).send(committed('merge/s1', 8));
    d.at(33 * MIN).send(committed('optimize', 9));
    expect(d.state.periodic.optimize.done).toBe(9);
    expect(d.state.periodic.index.done).toBe(7);
  });

  it('gc follows mergedThroughSeq, not the version', () => {
    const d = afterOneMerge({ periodSecs: { optimize: 0, index: 0, gc: 60 } }, 5_000);
    expect(prepares(d.at(60_000).send({ type: 'timer' })).map((p) => p.unit.id)).toEqual(['gc']);
    expect(d.state.periodic.gc.planned).toBe(2);
    d.send({ type: 'prepared', kind: 'gc', unitId: 'gc', needsCommit: true, prepared: null, attempts: 1 });
    d.at(61_000).send(committed('gc', 5));
    expect(d.state.periodic.gc.done).toBe(2);
    // A version change alone (an optimize bumped by an operator) does not make gc due.
    d.at(2 * MIN).send({ type: 'bump', bump: { target: { kind: 'optimize' }, class: 1, reason: 'r', expiresAtMs: 3 * MIN } });
    d.send({ type: 'prepared', kind: 'optimize', unitId: 'optimize', needsCommit: true, prepared: null, attempts: 1 });
    d.send(committed('optimize', 6));
    expect(prepares(d.at(5 * MIN).send({ type: 'timer' }))).toEqual([]);
  });

  it('a bump makes a kind due at once even when nothing changed; a failed run leaves it due', () => {
    const d = fresh();
    d.send({ type: 'timer' });
    idleUntil(d, 60 * MIN);
    const ds = d.at(61 * MIN).send({ type: 'bump', bump: { target: { unitId: 'index' }, class: 2, reason: 'r', expiresAtMs: 62 * MIN } });
    expect(prepares(ds).map((p) => p.unit.id)).toEqual(['index']);
    d.send({ type: 'prepareFailed', unitId: 'index', error: 'x', retryable: true, stalled: false });
    expect(d.unit('index')?.state).toBe('preparing');
    d.send({ type: 'prepareFailed', unitId: 'index', error: 'x', retryable: false, stalled: false });
    expect(d.state.dueAtMs.index).toBe(61 * MIN + 600_000);
    expect(d.state.periodic.index.done).toBeNull();
  });

  it('index stops planning once a plan says table.json configures no index; a bump looks again, and a plan with indices resumes it', () => {
    const d = afterOneMerge({ periodSecs: { optimize: 0, index: 60, gc: 0 } });
    const ids = (ds: Decision[]) => prepares(ds).map((p) => p.unit.id);
    const at = Math.max(d.state.dueAtMs.index, d.nowMs);
    // Due within its first period: already planned by the merge's commit, or at its time.
    if (!d.unit('index')) expect(ids(d.at(at).send({ type: 'timer' }))).toEqual(['index']);
    expect(d.unit('index')?.state).toBe('preparing');
    d.send({ type: 'prepared', kind: 'index', unitId: 'index', needsCommit: false, prepared: { missing: [], configured: 0 }, attempts: 1 });
    expect(d.state.noIndices).toBe(true);
    // More merges move the version; index would be due a period later, but stays quiet.
    d.at(at + 1000).send(demand('s0', 3));
    d.send(prepared('merge/s0'));
    d.send(committed('merge/s0', 9));
    expect(ids(d.at(at + 10 * 60_000).send({ type: 'timer' }))).toEqual([]);
    expect(d.state.units).toEqual([]);
    // An operator bump plans it again; indices configured since then resume the period.
    expect(ids(d.send({ type: 'bump', bump: { target: { kind: 'index' }, class: 2, reason: 'r', expiresAtMs: at + 11 * 60_000 } }))).toEqual(['index']);
    d.send({ type: 'prepared', kind: 'index', unitId: 'index', needsCommit: false, prepared: { missing: [], configured: 1 }, attempts: 1 });
    expect(d.state.noIndices).toBe(false);
    d.at(at + 12 * 60_000).send(demand('s0', 4));
    d.send(prepared('merge/s0'));
    // Its period came round while nothing changed: due at its point of a period after this commit.
    expect(ids(d.send(committed('merge/s0', 10)))).toEqual([]);
    expect(d.state.dueAtMs.index).toBeGreaterThan(d.nowMs);
    expect(ids(d.at(d.state.dueAtMs.index).send({ type: 'timer' }))).toEqual(['index']);
  });

  it('a table started with its count of configured indices: none, and index never plans unless bumped; some, and it plans after a change', () => {
    const started = (configuredIndices: number) => {
      const policy = simPolicy({ snapshotIntervalSecs: 60, snapshotMaxIntervalSecs: 900, periodSecs: { optimize: 0, index: 60, gc: 0 } });
      const d = new Driver(initialState({ table: 't', key: 'id', shards: ['s0', 's1'], policy, nowMs: 0, configuredIndices }));
      d.send({ type: 'timer' });
      d.send({ type: 'snapshot', revision: 0, shards: [] });
      d.send(demand('s0', 2));
      d.at(9_999).send(prepared('merge/s0'));
      d.at(10_000).send(committed('merge/s0', 5));
      return d;
    };
    const none = started(0);
    expect(none.state.noIndices).toBe(true);
    const timers = idleUntil(none, 30 * MIN);
    expect(timers.length).toBeGreaterThan(0);
    expect(prepares(none.decisions).filter((p) => p.unit.kind === 'index')).toEqual([]);
    expect(prepares(none.send({ type: 'bump', bump: { target: { kind: 'index' }, class: 2, reason: 'r', expiresAtMs: 31 * MIN } })).map((p) => p.unit.id)).toEqual(['index']);

    const some = started(2);
    expect(some.state.noIndices).toBe(false);
    const at = some.state.dueAtMs.index;
    expect(at).toBeLessThanOrEqual(10_000 + 60_000);
    expect(prepares(some.at(at).send({ type: 'timer' })).map((p) => p.unit.id)).toEqual(['index']);
  });

  it('a table that wants no index plans again once a merge reports its key index missing', () => {
    const policy = simPolicy({ snapshotIntervalSecs: 60, snapshotMaxIntervalSecs: 900, periodSecs: { optimize: 0, index: 60, gc: 0 } });
    const d = new Driver(initialState({ table: 't', key: 'id', shards: ['s0'], policy, nowMs: 0, configuredIndices: 0 }));
    d.send({ type: 'timer' });
    d.send({ type: 'snapshot', revision: 0, shards: [] });
    d.send(demand('s0', 2));
    d.at(9_999).send(prepared('merge/s0'));
    d.at(10_000).send(committed('merge/s0', 5));
    idleUntil(d, 30 * MIN);
    expect(prepares(d.decisions).filter((p) => p.unit.kind === 'index')).toEqual([]);
    // The table grew past the rows that want a BTREE on the key (src/storage/merge-join.ts).
    d.at(31 * MIN).send(demand('s0', 3));
    d.send(prepared('merge/s0'));
    d.send({ type: 'committed', unitId: 'merge/s0', version: 6, rows: 0, attempts: 1, keyIndexMissing: true });
    expect(d.state.noIndices).toBe(false);
    const at = Math.max(d.state.dueAtMs.index, d.nowMs);
    expect(at).toBeLessThanOrEqual(d.nowMs + 60_000);
    const ds = d.at(at).send({ type: 'timer' });
    expect(prepares(ds).map((p) => p.unit.id)).toEqual(['index']);
    // Its plan counts the key index among those wanted, so the table keeps planning.
    d.send({ type: 'prepared', kind: 'index', unitId: 'index', needsCommit: true, prepared: { missing: [{ column: 'id', type: 'btree' }], configured: 1 }, attempts: 1 });
    expect(d.state.noIndices).toBe(false);
  });

  it('index plans recorded without the count (older runs) keep planning every period', () => {
    const d = afterOneMerge({ periodSecs: { optimize: 0, index: 60, gc: 0 } });
    const at = Math.max(d.state.dueAtMs.index, d.nowMs);
    d.at(at).send({ type: 'timer' });
    expect(d.unit('index')?.state).toBe('preparing');
    d.send({ type: 'prepared', kind: 'index', unitId: 'index', needsCommit: false, prepared: { missing: [] }, attempts: 1 });
    expect(d.state.noIndices).toBeUndefined();
    d.at(at + 1000).send(demand('s0', 3));
    d.send(prepared('merge/s0'));
    d.send(committed('merge/s0', 9));
    expect(prepares(d.at(at + 10 * 60_000).send({ type: 'timer' })).map((p) => p.unit.id)).toEqual(['index']);
  });

  it('periodicWhenIdle: true runs them every period, as before', () => {
    const d = fresh({ periodicWhenIdle: true, periodSecs: { optimize: 300, index: 0, gc: 0 } });
    d.send({ type: 'timer' });
    d.send({ type: 'snapshot', revision: 0, shards: [] });
    expect(prepares(d.at(5 * MIN).send({ type: 'timer' })).map((p) => p.unit.id)).toEqual(['optimize']);
  });
});
