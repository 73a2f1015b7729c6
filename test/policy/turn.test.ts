import { describe, expect, it } from 'vitest';
import { effectiveClass, statusView, step } from '../../src/policy';
import type { PolicyEvent } from '../../src/policy/types';
import { commits, committed, demand, Driver, prepared, prepares, quietTable, twoMergesReady, wakeAts } from './helpers';

/** Prepared under a batch bound only it fits (maxBatchBytes): no other merge rides in its turn. */
function preparedAlone(d: Driver, unitId: string): PolicyEvent {
  const u = d.unit(unitId);
  if (u?.kind !== 'merge') return prepared(unitId);
  const batch = { shard: u.shard, fromSeq: u.fromSeq, toSeq: u.toSeq, preparedPath: null, rows: 1, bytes: 1, attempt: 1, resumedFromFile: 0, resumedVia: null, maxBatchBytes: 1 };
  return { type: 'prepared', kind: 'merge', unitId, needsCommit: true, prepared: batch, attempts: 1 };
}

describe('the turn', () => {
  it('has at most one holder; the next one is granted when it is released', () => {
    const d = twoMergesReady();
    expect(commits(d.decisions)).toHaveLength(1);
    expect(d.state.units.filter((u) => u.state === 'committing')).toHaveLength(1);
    const ds = d.at(3000).send(committed('merge/s0'));
    expect(commits(ds).map((c) => c.unit.id)).toEqual(['merge/s1']);
    expect(d.state.turn).toMatchObject({ unitId: 'merge/s1', kind: 'merge', sinceMs: 3000 });
  });

  it('ignores results for units that do not hold the turn (late duplicates)', () => {
    const d = twoMergesReady();
    const calm = step(d.state, { type: 'timer' }, 2000).state;
    for (const ev of [
      committed('merge/s1'),
      committed('nope'),
      prepared('merge/s1'),
      prepared('gc'),
      { type: 'commitFailed' as const, unitId: 'merge/s1', error: 'x', retryable: false, stalled: false },
      { type: 'prepareFailed' as const, unitId: 'merge/s0', error: 'x', retryable: false, stalled: true },
    ]) {
      const r = step(d.state, ev, 2000);
      expect(r.state).toStrictEqual(calm);
      expect(wakeAts(r.decisions)).toHaveLength(1);
    }
  });

  it('a bump makes a kind the very next turn, and creates its unit', () => {
    const d = twoMergesReady({ maxConsecutiveTurns: { merge: 100, optimize: 1, index: 1, gc: 1 } });
    d.send(demand('s0', 9, 5));
    const ds = d.at(2500).send({ type: 'bump', bump: { target: { kind: 'optimize' }, class: 1, reason: 'operator asked', expiresAtMs: 600_000 } });
    expect(prepares(ds).map((p) => p.unit.id)).toEqual(['optimize']);
    d.at(2600).send(prepared('optimize'));
    expect(statusView(d.state, 2600).queue[0]).toMatchObject({ unitId: 'optimize', class: 1, reason: 'next in line (class 1), after merge/s0' });
    const next = d.at(4000).send(committed('merge/s0'));
    expect(commits(next).map((c) => [c.unit.id, c.why])).toEqual([['optimize', 'class 1, bumped: operator asked']]);
  });

  it('a bump that has expired no longer counts', () => {
    const d = twoMergesReady();
    d.send({ type: 'bump', bump: { target: { unitId: 'merge/s1' }, class: 1, reason: 'r', expiresAtMs: 2500 } });
    expect(effectiveClass(d.state, d.unit('merge/s1')!, 2400)).toBe(1);
    expect(wakeAts(d.last!.decisions)[0]!.atMs).toBe(2500);
    d.at(2500).send({ type: 'timer' });
    expect(d.state.bumps).toHaveLength(0);
    expect(effectiveClass(d.state, d.unit('merge/s1')!, 2500)).toBe(2);
  });

  it('merge is class 1 while backlog is above softBacklog', () => {
    const d = new Driver(quietTable({ softBacklog: 5, hardBacklog: 50 }));
    d.send(demand('s0', 6));
    d.at(10).send(prepared('merge/s0'));
    expect(d.state.turn?.why).toBe('class 1, backlog 6 > softBacklog 5');
  });

  it('maxConsecutiveTurns hands the turn to another ready kind, even against class 1 merges', () => {
    // One merge per turn: the streak rule in isolation.
    const d = new Driver(quietTable({ softBacklog: 0, hardBacklog: 100, maxConsecutiveTurns: { merge: 2, optimize: 1, index: 1, gc: 1 } }));
    d.send({ type: 'bump', bump: { target: { kind: 'optimize' }, class: 3, reason: 'now', expiresAtMs: 1 } });
    d.send(demand('s0', 1));
    d.send(demand('s1', 1));
    d.at(1).send(prepared('optimize'));
    d.at(1).send(preparedAlone(d, 'merge/s0'));
    d.at(1).send(preparedAlone(d, 'merge/s1'));
    expect(d.state.turn?.unitId).toBe('optimize');
    let t = 2;
    const granted: string[] = [];
    const finish = (): void => {
      const id = d.state.turn!.unitId;
      const ds = d.at(t++).send(committed(id));
      for (const p of prepares(ds)) d.at(t++).send(preparedAlone(d, p.unit.id));
      granted.push(...commits(d.decisions.splice(0)).map((c) => c.unit.id));
    };
    d.decisions.length = 0;
    d.send(demand('s0', 2, 10));
    d.send(demand('s1', 2, 11));
    finish(); // optimize done; merges take turns
    d.send({ type: 'bump', bump: { target: { kind: 'optimize' }, class: 3, reason: 'again', expiresAtMs: t } });
    d.at(t++).send(prepared('optimize'));
    d.send(demand('s0', 3, 12));
    d.send(demand('s1', 3, 13));
    finish();
    finish();
    expect(granted.slice(0, 3)).toEqual(['merge/s0', 'merge/s1', 'optimize']);
    expect(d.state.counters.turns.optimize).toBe(1);
    expect(d.state.turn?.why).toMatch(/^class 3, aged priority .*; merge limited after 2 turns in a row$/);
  });

  it('promotes a unit to class 1 after maxTurnWaitSecs, with a durable deadline', () => {
    const d = new Driver(
      quietTable({
        softBacklog: 0,
        hardBacklog: 100,
        maxConsecutiveTurns: { merge: 1000, optimize: 1, index: 1, gc: 1 },
        maxTurnWaitSecs: { merge: 3600, optimize: 120, index: 300, gc: 600 },
      }),
    );
    d.send({ type: 'bump', bump: { target: { kind: 'gc' }, class: 4, reason: 'now', expiresAtMs: 0 } });
    d.send(demand('s0', 1, 1));
    d.send(demand('s1', 1, 2));
    d.at(1).send(prepared('merge/s0'));
    d.at(1).send(prepared('merge/s1'));
    d.at(2).send(prepared('gc'));
    expect(d.state.turn?.unitId).toBe('merge/s0');
    // gc waits behind class 1 merges; its promotion deadline is the wake-up.
    expect(wakeAts(d.last!.decisions)[0]!.atMs).toBe(2 + 600_000);
    expect(statusView(d.state, 3).queue.map((q) => q.reason)).toEqual([
      'next in line (class 1), after merge/s0',
      'waiting for the turn behind merge/s1 (class 1)',
    ]);
    // A hot merger: while one shard commits, the other is commit-ready.
    let rev = 10;
    let t = 30_000;
    while (d.state.turn?.kind === 'merge') {
      const holder = d.state.turn.unitId;
      const shard = d.unit(holder)!.shard!;
      // With pipelining the demand itself starts the next range's preparation.
      const onDemand = d.send(demand(shard, d.state.shards.find((s) => s.shard === shard)!.sealedThroughSeq + 1, ++rev));
      const ds = d.at(t).send(committed(holder));
      for (const p of [...prepares(onDemand), ...prepares(ds)]) d.at(t + 1).send(prepared(p.unit.id));
      t += 30_000;
    }
    expect(t).toBeGreaterThan(600_000);
    expect(d.state.turn).toMatchObject({ unitId: 'gc', why: expect.stringMatching(/^class 1, promoted after 600 s/) });
    expect(d.state.units.find((u) => u.id === 'gc')!.promotedAtMs).toBe(600_002);
  });

  it('a failed commit releases the turn and backs off exponentially, keeping its wait', () => {
    const d = twoMergesReady({ commitRetryBaseSecs: 2, commitRetryMaxSecs: 5 });
    const ds = d.at(3000).send({ type: 'commitFailed', unitId: 'merge/s0', error: 'conflict', retryable: true, stalled: false });
    expect(commits(ds).map((c) => c.unit.id)).toEqual(['merge/s1']);
    const u = d.unit('merge/s0')!;
    expect(u).toMatchObject({ state: 'backoff', commitAttempts: 1, notBeforeMs: 5000, readySinceMs: 1000 });
    expect(wakeAts(ds)[0]!.atMs).toBe(5000);
    expect(statusView(d.state, 3000).queue[0]).toMatchObject({ unitId: 'merge/s0', reason: 'commit retry backoff until +2 s (attempt 2: conflict)' });
    expect(d.state.counters.retries).toBe(1);
    d.at(5000).send({ type: 'timer' });
    expect(d.unit('merge/s0')!.state).toBe('ready');
    d.at(6000).send(committed('merge/s1'));
    expect(d.state.turn?.unitId).toBe('merge/s0');
    d.at(7000).send({ type: 'commitFailed', unitId: 'merge/s0', error: 'stall', retryable: true, stalled: true });
    expect(d.unit('merge/s0')!.notBeforeMs).toBe(7000 + 4000);
    d.at(11_000).send({ type: 'timer' });
    d.at(12_000).send({ type: 'commitFailed', unitId: 'merge/s0', error: 'x', retryable: true, stalled: false });
    expect(d.unit('merge/s0')!.notBeforeMs).toBe(12_000 + 5000);
    expect(d.state.counters).toMatchObject({ stalls: 1, retries: 3 });
  });

  it('a non-retryable commit failure of a merge holds its shard', () => {
    const d = twoMergesReady();
    d.at(3000).send({ type: 'commitFailed', unitId: 'merge/s0', error: 'schema mismatch', retryable: false, stalled: false });
    expect(d.state.shards.find((s) => s.shard === 's0')!.heldReason).toBe('schema mismatch');
    expect(d.state.turn?.unitId).toBe('merge/s1');
  });
});

describe('pause and resume', () => {
  it('pausing merge holds merges with a reason; running work finishes', () => {
    const d = twoMergesReady();
    d.send({ type: 'pause', kind: 'merge' });
    d.send(demand('s0', 8, 9));
    const ds = d.at(3000).send(committed('merge/s0'));
    expect(commits(ds)).toHaveLength(0);
    expect(prepares(ds)).toHaveLength(0);
    const v = statusView(d.state, 3000);
    expect(v.pausedKinds).toEqual(['merge']);
    expect(v.queue.map((q) => [q.unitId, q.reason])).toEqual([
      ['merge/s1', 'kind merge paused by operator'],
      ['merge/s0', 'kind merge paused by operator'],
    ]);
    const r = d.at(4000).send({ type: 'resume', kind: 'merge' });
    expect(commits(r).map((c) => c.unit.id)).toEqual(['merge/s1']);
    expect(prepares(r).map((p) => p.unit.id)).toEqual(['merge/s0']);
  });

  it('pausing the table stops everything; resume(null) resumes kinds and held shards too', () => {
    const d = new Driver(quietTable());
    d.send({ type: 'pause', kind: null });
    d.send({ type: 'pause', kind: 'gc' });
    d.send(demand('s0', 2));
    expect(d.state.units).toHaveLength(0);
    expect(statusView(d.state, 0).queue[0]!.reason).toBe('paused by operator');
    const r = d.send({ type: 'resume', kind: null });
    expect(d.state).toMatchObject({ paused: false, pausedKinds: [] });
    expect(prepares(r)).toHaveLength(1);
  });
});

describe('grouped merge commits', () => {
  /** Three merges made ready while the table is paused, so they compete for one grant at resume. */
  const threeReady = (): Driver => {
    const d = new Driver(quietTable({}, ['s0', 's1', 's2']));
    for (const [i, s] of ['s0', 's1', 's2'].entries()) d.send(demand(s, 2, i + 1));
    d.send({ type: 'pause', kind: null });
    for (const s of ['s0', 's1', 's2']) d.at(10).send(prepared(`merge/${s}`));
    d.decisions.length = 0;
    d.at(10).send({ type: 'resume', kind: null });
    return d;
  };

  it('ready merges ride in one turn: one commit decision, one turn counted, every shard merged', () => {
    const d = threeReady();
    const c = commits(d.decisions);
    expect(c).toHaveLength(1);
    const lead = c[0]!.unit.id;
    expect([lead, ...(c[0]!.riders ?? []).map((r) => r.id)].sort()).toEqual(['merge/s0', 'merge/s1', 'merge/s2']);
    expect(d.state.turn?.riders).toHaveLength(2);
    expect(statusView(d.state, 10).turn?.riders).toHaveLength(2);
    d.at(20).send(committed(lead));
    expect(d.state.turn).toBeNull();
    expect(d.state.counters.turns.merge).toBe(1);
    expect(d.state.counters.merges).toBe(3);
    expect(d.state.shards.map((s) => s.mergedThroughSeq)).toEqual([2, 2, 2]);
  });

  it('riders stop at the first unit of another kind in turn order', () => {
    const d = new Driver(quietTable({}, ['s0', 's1']));
    d.send(demand('s0', 1, 1));
    d.send(demand('s1', 1, 2));
    d.send({ type: 'bump', bump: { target: { kind: 'optimize' }, class: 2, reason: 'now', expiresAtMs: 100_000 } });
    d.send({ type: 'pause', kind: null });
    d.send(prepared('merge/s0'));
    d.send(prepared('optimize'));
    // Aged priorities at 20 s: merge/s0 3 + 2, optimize 2 + 2, merge/s1 3 + 0.
    d.at(20_000).send(prepared('merge/s1'));
    d.decisions.length = 0;
    d.send({ type: 'resume', kind: null });
    const c = commits(d.decisions);
    expect(c.map((x) => x.unit.id)).toEqual(['merge/s0']);
    expect(c[0]!.riders).toBeUndefined();
    d.at(20_010).send(committed('merge/s0'));
    expect(d.state.turn?.unitId).toBe('optimize');
  });

  it('a retryable failure backs off every unit of the group; a permanent one sends each to commit alone', () => {
    const d = threeReady();
    const lead = d.state.turn!.unitId;
    d.at(20).send({ type: 'commitFailed', unitId: lead, error: 'busy', retryable: true, stalled: false });
    expect(d.state.units.map((u) => u.state)).toEqual(['backoff', 'backoff', 'backoff']);
    d.at(60_000).send({ type: 'timer' });
    const again = d.state.turn!;
    expect(again.riders).toHaveLength(2);
    d.at(60_010).send({ type: 'commitFailed', unitId: again.unitId, error: 'corrupt prepared batch x', retryable: false, stalled: false });
    expect(d.state.shards.every((s) => s.heldReason === null)).toBe(true);
    expect(d.state.units.filter((u) => u.solo === true)).toHaveLength(3);
    // Next grants are one unit each; only the bad batch's shard ends up held.
    const solo = d.state.turn!;
    expect(solo.riders).toBeUndefined();
    d.at(60_020).send({ type: 'commitFailed', unitId: solo.unitId, error: 'corrupt prepared batch x', retryable: false, stalled: false });
    expect(d.state.shards.filter((s) => s.heldReason !== null).map((s) => `merge/${s.shard}`)).toEqual([solo.unitId]);
    expect(d.state.turn?.riders).toBeUndefined();
  });
});
