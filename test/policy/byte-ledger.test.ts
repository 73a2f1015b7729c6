import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { admit, emptyLedger, heldBytes, type AdmissionEvent, type Ledger } from '../../src/policy/byte-ledger';

// The byte ledger of a worker (invariant 6): never over budget, strict arrival order,
// and every request that fits the budget is admitted once what came before it ends.

const BUDGET = 1000;

/** Applies events, checking the budget after each; returns the ledger and every id ever admitted. */
function replay(events: AdmissionEvent[], budget = BUDGET): { ledger: Ledger; admitted: Set<string>; refused: Set<string> } {
  let ledger = emptyLedger(budget);
  const admitted = new Set<string>();
  const refused = new Set<string>();
  for (const e of events) {
    const r = admit(ledger, e);
    ledger = r.ledger;
    expect(heldBytes(ledger)).toBeLessThanOrEqual(budget);
    for (const id of r.admitted) admitted.add(id);
    for (const x of r.refused) refused.add(x.id);
  }
  return { ledger, admitted, refused };
}

const ids = fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h');
const event: fc.Arbitrary<AdmissionEvent> = fc.oneof(
  fc.record({ type: fc.constant('request' as const), id: ids, bytes: fc.integer({ min: 0, max: 1200 }) }),
  fc.record({ type: fc.constant('release' as const), id: ids }),
  fc.record({ type: fc.constant('convert' as const), from: ids, id: ids, bytes: fc.integer({ min: 0, max: 1200 }) }),
);

describe('admission ledger', () => {
  it('admits in order while it fits, and the first that does not fit blocks later small ones', () => {
    const r = replay([
      { type: 'request', id: 'a', bytes: 600 },
      { type: 'request', id: 'big', bytes: 500 },
      { type: 'request', id: 'small', bytes: 10 },
    ]);
    expect([...r.admitted]).toEqual(['a']);
    expect(r.ledger.waiting.map((w) => w.id)).toEqual(['big', 'small']);
    const after = admit(r.ledger, { type: 'release', id: 'a' });
    expect(after.admitted).toEqual(['big', 'small']);
  });

  it('refuses what exceeds the whole budget at once, with the sizes in one line', () => {
    const r = admit(emptyLedger(BUDGET), { type: 'request', id: 'huge', bytes: 1001 });
    expect(r.refused).toEqual([{ id: 'huge', why: 'huge: needs 1001 bytes, more than the whole budget of 1000' }]);
    expect(r.ledger.waiting).toEqual([]);
  });

  it('a converted claim shrinks in place, or waits first in line for what it lacks', () => {
    let l = replay([{ type: 'request', id: 'claim1', bytes: 500 }, { type: 'request', id: 'claim2', bytes: 500 }, { type: 'request', id: 'claim3', bytes: 500 }]).ledger;
    let r = admit(l, { type: 'convert', from: 'claim1', id: 'unit1', bytes: 200 });
    expect(r.admitted).toEqual(['unit1']);
    l = r.ledger;
    expect(l.waiting.map((w) => w.id)).toEqual(['claim3']); // 200 + 500 + 500 > 1000
    r = admit(l, { type: 'convert', from: 'claim2', id: 'unit2', bytes: 700 });
    expect(r.admitted).toEqual(['unit2']);
    expect(r.ledger.waiting.map((w) => w.id)).toEqual(['claim3']);
  });

  it('property: held bytes never exceed the budget, held and waiting ids are disjoint', () => {
    fc.assert(
      fc.property(fc.array(event, { maxLength: 80 }), (events) => {
        const { ledger } = replay(events);
        const held = new Set(ledger.held.map((r) => r.id));
        expect(ledger.waiting.some((w) => held.has(w.id))).toBe(false);
        expect(held.size).toBe(ledger.held.length);
      }),
      { numRuns: 200 },
    );
  });

  it('property: every request that fits the budget is admitted once everything before it ends (no starvation)', () => {
    fc.assert(
      fc.property(fc.array(event, { maxLength: 80 }), fc.integer({ min: 1, max: BUDGET }), (events, bigBytes) => {
        // A big request arrives in the middle of arbitrary traffic; then the traffic that
        // was admitted before it ends, while new small requests keep coming after it.
        const half = Math.floor(events.length / 2);
        const before = replay([...events.slice(0, half), { type: 'request', id: 'BIG', bytes: bigBytes }]);
        let ledger = before.ledger;
        let admittedBig = before.admitted.has('BIG');
        const stream = (i: number): AdmissionEvent => ({ type: 'request', id: `small${i}`, bytes: 1 });
        const earlier = [...ledger.held.map((r) => r.id), ...ledger.waiting.map((w) => w.id)].filter((id) => id !== 'BIG');
        let i = 0;
        for (const id of earlier) {
          for (const e of [stream(i++), { type: 'release' as const, id }]) {
            const r = admit(ledger, e);
            ledger = r.ledger;
            if (r.admitted.includes('BIG')) admittedBig = true;
          }
        }
        expect(admittedBig).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});
