import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { markTold, sweep, type ShardWatermark, type SweepState } from '../../src/policy/store-sweep';

const store = (seqs: Record<string, number[]>): Record<string, ShardWatermark[]> =>
  Object.fromEntries(Object.entries(seqs).map(([t, ss]) => [t, ss.map((seq, i) => ({ shard: `s${i}`, sealedThroughSeq: seq }))]));

describe('store sweep', () => {
  it('tells a quiet shard once, leaves a moving one and an idle table alone', () => {
    let state: SweepState = {};
    const round = (seqs: Record<string, number[]>) => {
      const r = sweep(state, store(seqs));
      for (const s of r.signals) markTold(r.next, s);
      state = r.next;
      return r.signals;
    };
    expect(round({ idle: [0, 0], busy: [3, 1] })).toEqual([]);
    // busy's s0 moved, s1 stayed: only s1 is told.
    expect(round({ idle: [0, 0], busy: [5, 1] })).toEqual([{ table: 'busy', shards: [{ shard: 's1', sealedThroughSeq: 1 }] }]);
    expect(round({ idle: [0, 0], busy: [7, 1] })).toEqual([]);
    expect(round({ idle: [0, 0], busy: [7, 1] })).toEqual([{ table: 'busy', shards: [{ shard: 's0', sealedThroughSeq: 7 }] }]);
    expect(round({ idle: [0, 0], busy: [7, 1] })).toEqual([]);
    // A dropped table leaves the state.
    round({ idle: [0, 0] });
    expect(Object.keys(state)).toEqual(['idle']);
  });

  it('a table dropped and created again under its name is told of its new seals', () => {
    let state = sweep({}, store({ t: [9] })).next;
    state = sweep(state, store({ t: [9] })).next;
    state.t!.s0!.told = 9;
    state = sweep(state, store({ t: [2] })).next;
    expect(sweep(state, store({ t: [2] })).signals).toEqual([{ table: 't', shards: [{ shard: 's0', sealedThroughSeq: 2 }] }]);
  });

  it('a signal not delivered is sent again by the next sweep', () => {
    const first = sweep({}, store({ t: [2] }));
    const second = sweep(first.next, store({ t: [2] }));
    expect(second.signals).toHaveLength(1);
    const third = sweep(second.next, store({ t: [2] }));
    expect(third.signals).toEqual(second.signals);
    markTold(third.next, third.signals[0]!);
    expect(sweep(third.next, store({ t: [2] })).signals).toEqual([]);
  });

  // A table whose signals may be lost: after its writers stop, the sweeps tell it every
  // seal within two sweeps, and a shard sealing between every two sweeps is never told.
  it('property: every seal is known within two sweeps of its shard going quiet; busy shards cost nothing', () => {
    const arb = fc.record({
      shards: fc.integer({ min: 1, max: 4 }),
      // Per sweep period, per shard: seals made in it, and whether their signal reached the table.
      periods: fc.array(fc.array(fc.record({ seals: fc.integer({ min: 0, max: 3 }), signalled: fc.boolean() }), { minLength: 4, maxLength: 4 }), { minLength: 1, maxLength: 30 }),
      delivered: fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }),
    });
    fc.assert(
      fc.property(arb, ({ shards, periods, delivered }) => {
        const sealed = new Array<number>(shards).fill(0);
        const known = new Array<number>(shards).fill(0);
        let state: SweepState = {};
        const sweepNow = (i: number) => {
          const r = sweep(state, store({ t: sealed.slice() }));
          for (const s of r.signals) {
            // A sweep never tells a shard it saw move since the last sweep.
            // Nor one it already told of that seq (once per quiet spell).
            for (const x of s.shards) {
              expect(state.t?.[x.shard]?.seen).toBe(x.sealedThroughSeq);
              expect(state.t?.[x.shard]?.told).toBeLessThan(x.sealedThroughSeq);
            }
            if (delivered[i % delivered.length] ?? true) {
              markTold(r.next, s);
              for (const x of s.shards) known[Number(x.shard.slice(1))] = Math.max(known[Number(x.shard.slice(1))]!, x.sealedThroughSeq);
            }
          }
          state = r.next;
        };
        periods.forEach((period, i) => {
          for (let s = 0; s < shards; s++) {
            const p = period[s]!;
            sealed[s]! += p.seals;
            if (p.signalled && p.seals > 0) known[s] = sealed[s]!;
          }
          sweepNow(i);
        });
        // Writers stop: two sweeps that deliver tell the table everything.
        state = sweep(state, store({ t: sealed.slice() })).next;
        for (let k = 0; k < 2; k++) {
          const r = sweep(state, store({ t: sealed.slice() }));
          for (const s of r.signals) {
            markTold(r.next, s);
            for (const x of s.shards) known[Number(x.shard.slice(1))] = Math.max(known[Number(x.shard.slice(1))]!, x.sealedThroughSeq);
          }
          state = r.next;
        }
        expect(known).toEqual(sealed);
      }),
      { numRuns: 300 },
    );
  });
});
