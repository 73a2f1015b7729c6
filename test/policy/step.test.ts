import { describe, expect, it } from 'vitest';
import { backlogOf, carryOver, initialState, NEVER, statusView, step } from '../../src/policy';
import type { PolicyEvent, TableState } from '../../src/policy/types';
import { commits, committed, demand, Driver, maintenanceMeasuredSlow, prepared, prepares, quietTable, simPolicy, twoMergesReady, wakeAts } from './helpers';


describe('initialState and the step contract', () => {
  it('starts empty, snapshots first, and always emits exactly one wakeAt', () => {
    const s = initialState({ table: 't', key: 'id', shards: ['b', 'a'], policy: simPolicy(), nowMs: 5 });
    expect(s.shards.map((x) => x.shard)).toEqual(['a', 'b']);
    const r = step(s, { type: 'timer' }, 5);
    expect(r.decisions.map((d) => d.type)).toEqual(['snapshot', 'wakeAt']);
    expect(r.state.snapshotInFlight).toBe(true);
    const r2 = step(r.state, { type: 'timer' }, 6);
    expect(r2.decisions.filter((d) => d.type === 'snapshot')).toHaveLength(0);
    expect(wakeAts(r2.decisions)).toHaveLength(1);
  });

  it('never changes its input', () => {
    const d = twoMergesReady();
    const before = JSON.stringify(d.state);
    deepFreeze(d.state);
    step(d.state, committed('merge/s0'), 3000);
    step(d.state, { type: 'commitFailed', unitId: 'merge/s0', error: 'x', retryable: true, stalled: true }, 3000);
    expect(JSON.stringify(d.state)).toBe(before);
  });

  it('keeps the state JSON round-trippable', () => {
    const d = twoMergesReady();
    d.send({ type: 'bump', bump: { target: { kind: 'gc' }, class: 1, reason: 'r', expiresAtMs: 99_000 } });
    d.send({ type: 'commitFailed', unitId: 'merge/s0', error: 'boom', retryable: true, stalled: false });
    expect(JSON.parse(JSON.stringify(d.state))).toStrictEqual(d.state);
    const p = quietTable();
    expect(p.dueAtMs.optimize).toBe(NEVER);
    expect(JSON.parse(JSON.stringify(p))).toStrictEqual(p);
  });
});

describe('units and preparation', () => {
  it('creates one merge per shard covering merged+1..sealed, within maxConcurrentPreparations', () => {
    const d = new Driver(quietTable({ maxConcurrentPreparations: 1 }));
    const ds = d.send(demand('s0', 4));
    expect(prepares(ds).map((p) => [p.unit.id, p.unit.fromSeq, p.unit.toSeq])).toEqual([['merge/s0', 1, 4]]);
    expect(prepares(d.send(demand('s1', 2)))).toHaveLength(0);
    expect(statusView(d.state, 0).queue).toEqual([
      { unitId: 'merge/s1', kind: 'merge', class: 2, waitedSecs: 0, reason: 'waiting for a preparation slot (1/1 preparing)' },
    ]);
    // A second demand for s0 does not create a second unit; the slot frees on `prepared`.
    expect(prepares(d.send(demand('s0', 6)))).toHaveLength(0);
    const after = d.at(10).send(prepared('merge/s0'));
    expect(prepares(after).map((p) => p.unit.id)).toEqual(['merge/s1']);
    expect(commits(after).map((c) => c.unit.id)).toEqual(['merge/s0']);
  });

  it("a merge takes the range its preparation covered: less (a bounded batch) or more (sealed since), never past what is known sealed", () => {
    const mergePrepared = (unitId: string, shard: string, fromSeq: number, toSeq: number, scanThrough?: number): PolicyEvent => ({
      type: 'prepared',
      kind: 'merge',
      unitId,
      needsCommit: true,
      attempts: 1,
      prepared: { shard, fromSeq, toSeq, preparedPath: `p/${shard}-${fromSeq}-${toSeq}`, rows: 10, bytes: 100, attempt: 1, resumedFromFile: 0, resumedVia: null },
      ...(scanThrough === undefined ? {} : { scan: { revision: scanThrough, shards: [{ shard, sealedThroughSeq: scanThrough, revision: scanThrough }] } }),
    });
    const d = new Driver(quietTable({}, ['s0']));
    d.send(demand('s0', 2));
    expect(d.unit('merge/s0')).toMatchObject({ fromSeq: 1, toSeq: 2 });
    // Seqs 3..5 were sealed while it was queued: its scan says so, and the unit covers them.
    d.at(10).send(mergePrepared('merge/s0', 's0', 1, 5, 5));
    expect(d.unit('merge/s0')).toMatchObject({ state: 'committing', toSeq: 5 });
    // The follower starts after the grown range.
    expect(prepares(d.send(demand('s0', 7))).map((x) => [x.unit.id, x.unit.fromSeq, x.unit.toSeq])).toEqual([['merge/s0@6', 6, 7]]);
    d.at(20).send(committed('merge/s0'));
    expect(d.state.shards[0]!.mergedThroughSeq).toBe(5);
    // Past what the table knows is sealed (no scan came with it): the range stays.
    const e = new Driver(quietTable({}, ['s0']));
    e.send(demand('s0', 2));
    e.at(10).send(mergePrepared('merge/s0', 's0', 1, 4));
    expect(e.unit('merge/s0')).toMatchObject({ toSeq: 2 });
    // A batch bounded by memory: the rest stays backlog for the next unit.
    const f = new Driver(quietTable({}, ['s0']));
    f.send(demand('s0', 6));
    f.at(10).send(mergePrepared('merge/s0', 's0', 1, 3));
    expect(f.unit('merge/s0')).toMatchObject({ toSeq: 3 });
  });

  it('a commit advances mergedThroughSeq; what was sealed after its range prepares meanwhile', () => {
    const d = twoMergesReady();
    expect(d.state.turn?.unitId).toBe('merge/s0');
    const sealed = d.send(demand('s0', 7, 3));
    expect(prepares(sealed).map((p) => [p.unit.id, p.unit.fromSeq, p.unit.toSeq])).toEqual([['merge/s0@4', 4, 7]]);
    const ds = d.at(5000).send(committed('merge/s0', 11, 300));
    const s0 = d.state.shards.find((s) => s.shard === 's0')!;
    expect(s0.mergedThroughSeq).toBe(3);
    expect(d.state.version).toBe(11);
    expect(d.state.counters).toMatchObject({ merges: 1, rowsMerged: 300, turns: { merge: 1 } });
    expect(prepares(ds)).toEqual([]);
    expect(commits(ds).map((c) => c.unit.id)).toEqual(['merge/s1']);
    expect(d.state.counters.maxTurnWaitSecs.merge).toBe(3);
  });

  it('needsCommit=false finishes a unit without the turn and sets the next due time', () => {
    const d = new Driver(quietTable({ periodSecs: { optimize: 60, index: 0, gc: 0 }, periodicWhenIdle: true }));
    const ds = d.at(60_000).send({ type: 'timer' });
    expect(prepares(ds).map((p) => p.unit.id)).toEqual(['optimize']);
    d.at(61_000).send({ type: 'prepared', kind: 'optimize', unitId: 'optimize', needsCommit: false, prepared: null, attempts: 3 });
    expect(d.state.units).toHaveLength(0);
    expect(d.state.dueAtMs.optimize).toBe(121_000);
    expect(d.state.counters.retries).toBe(2);
    // The timer comes a quarter period late: a write's workflow task may start it first.
    expect(wakeAts(d.last!.decisions)[0]!.atMs).toBe(121_000 + 15_000);
  });

  it('a retryable preparation failure recreates the unit with the current range; a stall is counted', () => {
    const d = new Driver(quietTable());
    d.send(demand('s0', 2));
    d.send(demand('s0', 5));
    const ds = d.send({ type: 'prepareFailed', unitId: 'merge/s0', error: 'stalled', retryable: true, stalled: true });
    expect(prepares(ds).map((p) => [p.unit.fromSeq, p.unit.toSeq])).toEqual([[1, 5]]);
    expect(d.state.counters).toMatchObject({ stalls: 1, retries: 1 });
  });

  it('a non-retryable preparation failure holds only that shard, visibly, until resume', () => {
    const d = new Driver(quietTable());
    d.send(demand('s0', 2));
    d.send(demand('s1', 2));
    d.send({ type: 'prepareFailed', unitId: 'merge/s0', error: 'corrupt generation 2', retryable: false, stalled: false });
    expect(d.state.shards.find((s) => s.shard === 's0')!.heldReason).toBe('corrupt generation 2');
    expect(d.unit('merge/s0')).toBeUndefined();
    d.send(demand('s0', 3));
    expect(d.unit('merge/s0')).toBeUndefined();
    const ds = d.at(10).send(prepared('merge/s1'));
    expect(commits(ds).map((c) => c.unit.id)).toEqual(['merge/s1']);
    const v = statusView(d.state, 10);
    expect(v.shards.find((s) => s.shard === 's0')!.heldReason).toBe('corrupt generation 2');
    expect(v.queue).toContainEqual({ unitId: 'merge/s0', kind: 'merge', class: 2, waitedSecs: 0, reason: 'held: corrupt generation 2' });
    const r = d.send({ type: 'resume', kind: 'merge' });
    expect(prepares(r).map((p) => p.unit.id)).toEqual(['merge/s0']);
  });

  it('a non-retryable failure of optimize drops it until its next period, when it runs again', () => {
    const d = new Driver(maintenanceMeasuredSlow(quietTable({ periodSecs: { optimize: 30, index: 0, gc: 0 } })));
    // Something changed (a maintenance-free version bump), so optimize has work.
    d.send({ type: 'bump', bump: { target: { kind: 'optimize' }, class: 3, reason: 'r', expiresAtMs: 1 } });
    expect(d.unit('optimize')?.state).toBe('preparing');
    d.at(1000).send({ type: 'prepareFailed', unitId: 'optimize', error: 'bad plan', retryable: false, stalled: false });
    expect(d.state.units).toHaveLength(0);
    expect(d.state.dueAtMs.optimize).toBe(31_000);
    expect(wakeAts(d.last!.decisions)[0]!.atMs).toBe(31_000 + 7_500);
    expect(prepares(d.at(31_000).send({ type: 'timer' })).map((p) => p.unit.id)).toEqual(['optimize']);
  });

  it('status lists preparing units; their phase is left to the client (heartbeats)', () => {
    const d = new Driver(quietTable());
    d.send(demand('s0', 1));
    expect(statusView(d.state, 0).preparing).toEqual([{ unitId: 'merge/s0', kind: 'merge', reservedBytes: 0, phase: null }]);
  });
});

describe('snapshot, policy, wake-ups', () => {
  it('schedules snapshots and folds them', () => {
    const d = new Driver(quietTable());
    expect(d.state.dueAtMs.snapshot).toBe(3_600_000);
    d.send({ type: 'policyChanged', policy: { ...d.state.policy, snapshotIntervalSecs: 10 } });
    expect(wakeAts(d.last!.decisions)[0]!.atMs).toBe(10_000);
    const ds = d.at(10_000).send({ type: 'timer' });
    expect(ds.map((x) => x.type)).toContain('snapshot');
    d.at(10_500).send({ type: 'snapshot', revision: 4, shards: [{ shard: 'zz', sealedThroughSeq: 2, revision: 4 }] });
    expect(d.state.shards.map((s) => s.shard)).toEqual(['s0', 's1', 'zz']);
    expect(d.state.snapshotInFlight).toBe(false);
    expect(d.state.dueAtMs.snapshot).toBe(20_500);
  });

  it('keeps write pressure current in the state after every event (the shell publishes it from there)', () => {
    const d = new Driver(quietTable({ softBacklog: 2, hardBacklog: 6 }));
    d.send(demand('s0', 4));
    expect([d.state.writePressure, backlogOf(d.state)]).toEqual([0.5, 4]);
    d.send(demand('s0', 4));
    expect([d.state.writePressure, backlogOf(d.state)]).toEqual([0.5, 4]);
    d.send(demand('s1', 3));
    expect([d.state.writePressure, backlogOf(d.state)]).toEqual([1, 7]);
  });

  it('policyChanged re-evaluates with the new policy', () => {
    const d = new Driver(quietTable({ maxConcurrentPreparations: 1 }));
    d.send(demand('s0', 1));
    d.send(demand('s1', 1));
    expect(d.state.units).toHaveLength(1);
    const ds = d.send({ type: 'policyChanged', policy: { ...d.state.policy, maxConcurrentPreparations: 2 } });
    expect(prepares(ds).map((p) => p.unit.id)).toEqual(['merge/s1']);
    const ds2 = d.at(5).send({ type: 'policyChanged', policy: { ...d.state.policy, periodSecs: { optimize: 1, index: 0, gc: 0 }, periodicWhenIdle: true } });
    expect(wakeAts(ds2)[0]!.atMs).toBe(1005 + 250);
  });

  it('carryOver drops unstarted work but keeps waiting units with their wait', () => {
    const d = twoMergesReady();
    d.send(demand('s0', 9, 9));
    const c: TableState = carryOver(d.state);
    expect(c.turn).toBeNull();
    expect(c.units.map((u) => [u.id, u.state, u.readySinceMs])).toEqual([
      ['merge/s0', 'ready', 1000],
      ['merge/s1', 'ready', 2000],
    ]);
    expect(commits(step(c, { type: 'timer' }, 3000).decisions).map((x) => x.unit.id)).toEqual(['merge/s0']);
  });

  it('carryOver takes back a grant whose commit never started, streak included', () => {
    // optimize may take one turn in a row; a bump puts it in class 1 ahead of the merges.
    const d = twoMergesReady({ maxConsecutiveTurns: { merge: 5, optimize: 1, index: 1, gc: 1 } });
    d.at(3000).send(committed('merge/s0'));
    expect(d.state.turn?.unitId).toBe('merge/s1');
    d.send({ type: 'bump', bump: { target: { kind: 'optimize' }, class: 1, reason: 'r', expiresAtMs: 99_000 } });
    d.send(demand('s0', 9, 9));
    d.at(4000).send(prepared('optimize'));
    d.at(4100).send(prepared('merge/s0'));
    // The merge's commit ends while the run drains: the core grants optimize the turn, the
    // shell starts nothing and continues as new.
    const granted = d.at(5000).send(committed('merge/s1'));
    expect(commits(granted).map((x) => x.unit.id)).toEqual(['optimize']);
    expect(d.state.streak).toEqual({ kind: 'optimize', count: 1 });
    const c = carryOver(d.state);
    expect(c.streak).toEqual({ kind: 'merge', count: 2 });
    // In the new run optimize still goes first; it is not "limited after 1 turn in a row".
    const first = commits(step(c, { type: 'timer' }, 6000).decisions);
    expect(first.map((x) => [x.unit.id, x.why])).toEqual([['optimize', 'class 1, bumped: r']]);
  });
});

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object') {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}

describe('periodic timers come after the due time', () => {
  it('a write after the due time starts the kind in its own step; a quiet table waits a quarter period, at most a minute', () => {
    for (const [secs, slack] of [
      [60, 15_000],
      [300, 60_000],
      [900, 60_000],
    ] as const) {
      const d = new Driver(maintenanceMeasuredSlow(quietTable({ periodSecs: { optimize: secs, index: 0, gc: 0 }, periodicWhenIdle: true })));
      const due = d.state.dueAtMs.optimize;
      expect(wakeAts(d.send({ type: 'timer' })).at(-1)?.atMs).toBe(due + slack);
      // A demand after the due time: the merge and the optimize start together.
      const ds = d.at(due + 1).send(demand('s0', 1));
      expect(prepares(ds).map((p) => p.unit.id).sort()).toEqual(['merge/s0', 'optimize']);
    }
  });
});
