import { describe, expect, it } from 'vitest';
import { justGrantedDirect } from '../../src/policy';
import { commits, committed, Driver, prepared, prepares, quietTable } from './helpers';

// Direct merges (src/policy/units.ts): a single small generation whose writer reported
// its size commits without a preparation activity.

const demand = (shard: string, seq: number, bytes?: number) => ({ type: 'demand' as const, shard, sealedThroughSeq: seq, revision: seq, ...(bytes !== undefined ? { bytes } : {}) });

describe('direct merges', () => {
  it('one small generation: no preparation, the commit is decided in the same step', () => {
    const d = new Driver(quietTable());
    const ds = d.send(demand('s0', 1, 5000));
    expect(prepares(ds)).toEqual([]);
    const c = commits(ds);
    expect(c.map((x) => x.unit.id)).toEqual(['merge/s0']);
    expect(c[0]!.unit.prepared).toMatchObject({ shard: 's0', fromSeq: 1, toSeq: 1, preparedPath: null, bytes: 5000, direct: true });
    d.at(100).send(committed('merge/s0', 2));
    expect(d.state.shards.find((s) => s.shard === 's0')!.mergedThroughSeq).toBe(1);
  });

  it('justGrantedDirect: only in the instant a direct merge takes the turn (the UI publisher leaves it out)', () => {
    const d = new Driver(quietTable());
    d.send(demand('s0', 1, 5000));
    expect(justGrantedDirect(d.state, 0)).toBe(true);
    expect(justGrantedDirect(d.state, 5)).toBe(false);
    d.at(100).send(committed('merge/s0', 2));
    expect(justGrantedDirect(d.state, 100)).toBe(false);
    // A prepared merge taking the turn is published as before.
    const p = new Driver(quietTable());
    p.send(demand('s0', 1));
    p.at(10).send(prepared('merge/s0'));
    expect(p.state.turn?.unitId).toBe('merge/s0');
    expect(justGrantedDirect(p.state, 10)).toBe(false);
  });

  it('prepared as before: size unknown, above directMergeMaxBytes, several generations, or directMergeMaxBytes 0', () => {
    const cases: [ReturnType<typeof demand>[], number][] = [
      [[demand('s0', 1)], 1_048_576],
      [[demand('s0', 1, 2_000_000)], 1_048_576],
      [[demand('s0', 2, 100)], 1_048_576],
      [[demand('s0', 1, 100)], 0],
    ];
    for (const [events, max] of cases) {
      const d = new Driver(quietTable({ directMergeMaxBytes: max }));
      let ds = events.flatMap((e) => d.send(e));
      expect(prepares(ds).map((p) => p.unit.id)).toEqual(['merge/s0']);
      expect(commits(ds)).toEqual([]);
      ds = d.at(10).send(prepared('merge/s0'));
      expect(commits(ds).map((c) => (c.unit.kind === 'merge' ? c.unit.prepared?.direct : 'not a merge'))).toEqual([undefined]);
    }
  });

  it('the size is of the newest generation only: a later seal without one, or a snapshot that raised the watermark, forgets it', () => {
    const d = new Driver(quietTable());
    d.send(demand('s0', 1, 100));
    expect(d.state.shards[0]!.sealedBytes).toBe(100);
    d.send(demand('s0', 2));
    expect(d.state.shards[0]!.sealedBytes).toBeUndefined();
    // A duplicate of the older demand arrives late: it says nothing about seq 2.
    d.send(demand('s0', 1, 100));
    expect(d.state.shards[0]!.sealedBytes).toBeUndefined();
    const e = new Driver(quietTable());
    e.send({ type: 'snapshot', revision: 5, shards: [{ shard: 's1', sealedThroughSeq: 3, revision: 5 }] });
    e.send(demand('s1', 3, 100));
    expect(e.state.shards.find((s) => s.shard === 's1')!.sealedBytes).toBe(100);
    e.send({ type: 'snapshot', revision: 9, shards: [{ shard: 's1', sealedThroughSeq: 4, revision: 9 }] });
    expect(e.state.shards.find((s) => s.shard === 's1')!.sealedBytes).toBeUndefined();
  });

  it('a direct merge waiting behind another holder takes no preparation slot and keeps its place in turn order', () => {
    const d = new Driver(quietTable({ maxConcurrentPreparations: 1 }));
    d.send(demand('s0', 1, 100));
    expect(d.state.turn?.unitId).toBe('merge/s0');
    const ds = d.at(5).send(demand('s1', 1, 100));
    expect(prepares(ds)).toEqual([]);
    expect(d.unit('merge/s1')?.state).toBe('ready');
    expect(commits(d.at(10).send(committed('merge/s0', 2))).map((c) => c.unit.id)).toEqual(['merge/s1']);
  });
});
