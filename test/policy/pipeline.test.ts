import { describe, expect, it } from 'vitest';
import { commits, committed, demand, prepared, prepares, twoMergesReady } from './helpers';

// Pipelined merges (src/policy/units.ts): a shard's next range prepares while its head
// waits for or holds the turn, and commits only once the head has.

describe('pipelined merges', () => {
  it('the next range prepares while the head holds the turn, and commits right after it', () => {
    const d = twoMergesReady();
    expect(d.state.turn?.unitId).toBe('merge/s0');
    // Sealed while merge/s0 (1..3) commits: a follower prepares 4..7 at once.
    const ds = d.at(3000).send(demand('s0', 7, 3));
    expect(prepares(ds).map((p) => [p.unit.id, p.unit.fromSeq, p.unit.toSeq])).toEqual([['merge/s0@4', 4, 7]]);
    // Prepared before its head committed: it waits, not even riding in its head's turn.
    d.at(3500).send(prepared('merge/s0@4'));
    expect(d.state.turn).toMatchObject({ unitId: 'merge/s0' });
    expect(d.state.turn?.riders ?? []).toEqual([]);
    // Once its head committed it is a head (4 = merged 3 + 1): it rides with merge/s1.
    const after = d.at(4000).send(committed('merge/s0', 2, 10));
    expect(commits(after).map((c) => [c.unit.id, ...(c.riders ?? []).map((r) => r.id)])).toEqual([['merge/s1', 'merge/s0@4']]);
    d.at(5000).send(committed('merge/s1', 3, 10));
    expect(d.state.shards.find((s) => s.shard === 's0')!.mergedThroughSeq).toBe(7);
    expect(d.state.units).toEqual([]);
  });

  it('no follower while the head still prepares, and at most one', () => {
    const d = twoMergesReady();
    d.send(demand('s0', 5, 3));
    d.send(demand('s0', 9, 4));
    expect(d.state.units.filter((u) => u.shard === 's0').map((u) => [u.id, u.fromSeq, u.toSeq])).toEqual([
      ['merge/s0', 1, 3],
      ['merge/s0@4', 4, 5],
    ]);
  });

  it('a follower with nothing to commit waits for its head without the turn, then finishes with it', () => {
    const d = twoMergesReady();
    d.send(demand('s0', 6, 3));
    d.at(3000).send({ type: 'prepared', kind: 'merge', unitId: 'merge/s0@4', needsCommit: false, prepared: null, attempts: 1 });
    expect(d.unit('merge/s0@4')).toMatchObject({ state: 'ready', emptyPrepared: true });
    expect(d.state.shards.find((s) => s.shard === 's0')!.mergedThroughSeq).toBe(0);
    const ds = d.at(4000).send(committed('merge/s0', 2, 10));
    expect(d.unit('merge/s0@4')).toBeUndefined();
    expect(d.state.shards.find((s) => s.shard === 's0')!.mergedThroughSeq).toBe(6);
    expect(commits(ds).map((c) => c.unit.id)).toEqual(['merge/s1']);
  });

  it('a head that fails for good holds its shard and takes its follower with it', () => {
    const d = twoMergesReady();
    d.send(demand('s0', 6, 3));
    d.at(3000).send(prepared('merge/s0@4'));
    d.at(4000).send({ type: 'commitFailed', unitId: 'merge/s0', error: 'corrupt generation', retryable: false, stalled: false });
    expect(d.state.units.filter((u) => u.shard === 's0')).toEqual([]);
    expect(d.state.shards.find((s) => s.shard === 's0')!.heldReason).toBe('corrupt generation');
  });
});
