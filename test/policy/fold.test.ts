import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { step } from '../../src/policy';
import type { PolicyEvent, TableState } from '../../src/policy/types';
import { quietTable } from './helpers';

type Demand = Extract<PolicyEvent, { type: 'demand' }>;

const shardName = fc.constantFrom('s0', 's1', 's2', 'x9');
const demandArb: fc.Arbitrary<Demand> = fc.record({
  type: fc.constant('demand' as const),
  shard: shardName,
  sealedThroughSeq: fc.integer({ min: 0, max: 60 }),
  revision: fc.integer({ min: 0, max: 200 }),
});

const watermarks = (s: TableState) => s.shards.map(({ shard, sealedThroughSeq, sealedRevision }) => ({ shard, sealedThroughSeq, sealedRevision }));

function play(events: readonly PolicyEvent[], start = quietTable({ maxConcurrentPreparations: 0 })): TableState {
  let s = start;
  events.forEach((e, i) => (s = step(s, e, i).state));
  return s;
}

describe('demand folding (property 4)', () => {
  it('permuting or duplicating demand events gives the same watermarks', () => {
    fc.assert(
      fc.property(
        fc.array(demandArb, { maxLength: 40 }).chain((events) =>
          fc.tuple(
            fc.constant(events),
            fc.shuffledSubarray(events, { minLength: events.length, maxLength: events.length }),
            fc.array(fc.nat(), { maxLength: 20 }),
          ),
        ),
        ([events, permuted, dupIdx]) => {
          const withDups = [...permuted];
          for (const i of dupIdx) if (events.length > 0) withDups.splice(i % (withDups.length + 1), 0, events[i % events.length]!);
          const a = watermarks(play(events));
          expect(watermarks(play(permuted))).toEqual(a);
          expect(watermarks(play(withDups))).toEqual(a);
          // The folded seq is the maximum seen (shards that never got a demand stay at 0).
          for (const w of a) {
            const seen = events.filter((e) => e.shard === w.shard).map((e) => e.sealedThroughSeq);
            expect(w.sealedThroughSeq).toBe(Math.max(0, ...seen));
          }
        },
      ),
      { numRuns: 1500 },
    );
  });

  it('adds unknown shards, sorted by name', () => {
    const s = play([
      { type: 'demand', shard: 'zeta', sealedThroughSeq: 1, revision: 1 },
      { type: 'demand', shard: 'alpha', sealedThroughSeq: 1, revision: 2 },
    ]);
    expect(s.shards.map((x) => x.shard)).toEqual(['alpha', 's0', 's1', 'zeta']);
  });
});

describe('snapshots (property 5)', () => {
  const entry = fc.record({ shard: shardName, sealedThroughSeq: fc.integer({ min: 0, max: 60 }), revision: fc.integer({ min: 0, max: 200 }) });
  const eventArb: fc.Arbitrary<PolicyEvent> = fc.oneof(
    demandArb,
    fc.record({ type: fc.constant('snapshot' as const), revision: fc.nat(200), shards: fc.array(entry, { maxLength: 4 }) }),
  );

  it('a snapshot lowers a watermark only with a newer revision, never below merged', () => {
    fc.assert(
      fc.property(fc.array(eventArb, { maxLength: 40 }), fc.array(fc.nat(60), { minLength: 4, maxLength: 4 }), (events, merged) => {
        let s = quietTable({ maxConcurrentPreparations: 0 });
        // Some shards start with merged generations (as after earlier commits).
        s = {
          ...s,
          shards: s.shards.map((sh, i) => ({ ...sh, sealedThroughSeq: merged[i]!, mergedThroughSeq: merged[i]!, sealedRevision: 0 })),
        };
        events.forEach((e, i) => {
          const before = s;
          s = step(s, e, i).state;
          for (const b of before.shards) {
            const a = s.shards.find((x) => x.shard === b.shard)!;
            expect(a.mergedThroughSeq).toBe(b.mergedThroughSeq);
            expect(a.sealedThroughSeq).toBeGreaterThanOrEqual(a.mergedThroughSeq);
            if (a.sealedThroughSeq < b.sealedThroughSeq) {
              expect(e.type).toBe('snapshot');
              const entries = e.type === 'snapshot' ? e.shards.filter((x) => x.shard === b.shard) : [];
              expect(entries.some((x) => x.revision > b.sealedRevision)).toBe(true);
              expect(a.sealedRevision).toBeGreaterThan(b.sealedRevision);
            }
          }
        });
      }),
      { numRuns: 1500 },
    );
  });

  it('examples: newer revision lowers (not below merged), older or equal does not, higher seq raises', () => {
    let s = play([{ type: 'demand', shard: 's0', sealedThroughSeq: 10, revision: 5 }]);
    const snap = (seq: number, revision: number) => (s = step(s, { type: 'snapshot', revision, shards: [{ shard: 's0', sealedThroughSeq: seq, revision }] }, 0).state);
    const s0 = () => s.shards.find((x) => x.shard === 's0')!;
    snap(7, 5);
    expect(s0()).toMatchObject({ sealedThroughSeq: 10, sealedRevision: 5 });
    snap(7, 6);
    expect(s0()).toMatchObject({ sealedThroughSeq: 7, sealedRevision: 6 });
    snap(12, 1);
    expect(s0()).toMatchObject({ sealedThroughSeq: 12, sealedRevision: 1 });
    s = { ...s, shards: s.shards.map((x) => (x.shard === 's0' ? { ...x, mergedThroughSeq: 9 } : x)) };
    snap(3, 50);
    expect(s0()).toMatchObject({ sealedThroughSeq: 9, sealedRevision: 50, mergedThroughSeq: 9 });
  });
});
