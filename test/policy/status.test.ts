import { describe, expect, it } from 'vitest';
import { statusView } from '../../src/policy';
import { committed, demand, Driver, maintenanceMeasuredSlow, prepared, quietTable } from './helpers';

describe('statusView', () => {
  it('has the fields of `turnstile status --json`', () => {
    const d = new Driver(quietTable());
    d.send(demand('s0', 3));
    d.at(1000).send(prepared('merge/s0'));
    const v = statusView(d.state, 3500);
    expect(Object.keys(v).sort()).toEqual(
      ['table', 'version', 'paused', 'pausedKinds', 'writePressure', 'backlog', 'shards', 'turn', 'preparing', 'queue', 'counters', 'snapshot'].sort(),
    );
    // quietTable's scan ran at 0 with snapshotIntervalSecs 3600 (and the default max below it).
    expect(v.snapshot).toEqual({ everySecs: 3600, running: false, nextInSecs: 3596.5 });
    expect(v.turn).toEqual({ unitId: 'merge/s0', kind: 'merge', sinceSecs: 2.5, why: 'class 2, aged priority 3.0' });
    expect(v.shards[0]).toEqual({ shard: 's0', sealedThroughSeq: 3, mergedThroughSeq: 0, heldReason: null });
    expect(v.backlog).toBe(3);
    expect(Object.keys(v.counters).sort()).toEqual(['maxTurnWaitSecs', 'merges', 'rejectedSignals', 'retries', 'rowsMerged', 'stalls', 'turns']);
    expect(JSON.parse(JSON.stringify(v))).toEqual(v);
  });

  it('says when a kind is limited by maxConsecutiveTurns, and who is next', () => {
    const d = new Driver(maintenanceMeasuredSlow(quietTable({ maxConsecutiveTurns: { merge: 1, optimize: 1, index: 1, gc: 1 } })));
    d.send(demand('s0', 1, 1));
    d.send(demand('s1', 1, 2));
    d.at(1).send(prepared('merge/s0'));
    d.at(1).send(prepared('merge/s1'));
    d.send({ type: 'bump', bump: { target: { kind: 'optimize' }, class: 3, reason: 'x', expiresAtMs: 0 } });
    d.at(2).send(prepared('optimize'));
    const q = statusView(d.state, 10_000).queue;
    expect(q.map((e) => [e.unitId, e.class, e.reason])).toEqual([
      ['merge/s1', 2, 'limited: merge took 1 turn in a row'],
      ['optimize', 3, 'next in line (class 3), after merge/s0'],
    ]);
    expect(q[0]!.waitedSecs).toBeCloseTo(9.999);
    d.at(10_000).send(committed('merge/s0'));
    expect(d.state.turn?.unitId).toBe('optimize');
  });

  it('lists due work that has no unit yet, with the reason', () => {
    const d = new Driver(quietTable());
    d.send({ type: 'pause', kind: 'optimize' });
    d.at(5000).send({ type: 'bump', bump: { target: { kind: 'optimize' }, class: 1, reason: 'x', expiresAtMs: 9e9 } });
    expect(statusView(d.state, 8000).queue).toEqual([
      { unitId: 'optimize', kind: 'optimize', class: 3, waitedSecs: 3, reason: 'kind optimize paused by operator' },
    ]);
  });
});
