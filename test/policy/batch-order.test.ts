import fc from 'fast-check';
import { expect, it } from 'vitest';
import { canonicalOrder, type PolicyEvent } from '../../src/policy';

// The order in which one activation's activity results reach the workflow depends on the
// SDK's job order and on promise steps, not on the history: canonicalOrder must give one
// order for every arrival order of the same results, and keep messages as they came.

const result = fc.oneof(
  fc.constantFrom('merge/s0', 'merge/s1', 'merge/s0@12', 'optimize', 'gc').map((unitId): PolicyEvent => ({ type: 'committed', unitId, version: 3, attempts: 1 })),
  fc.constantFrom('merge/s0', 'merge/s1', 'index').map((unitId): PolicyEvent => ({ type: 'prepareFailed', unitId, error: 'x', retryable: true, stalled: false })),
  fc.constantFrom('merge/s2', 'merge/s1@4').map((unitId): PolicyEvent => ({ type: 'noHeadroom', unitId, bytes: 10 })),
  fc.constant<PolicyEvent>({ type: 'snapshot', shards: [], revision: 1 } as unknown as PolicyEvent),
);
const message = fc.oneof(
  fc.integer({ min: 1, max: 50 }).map((seq): PolicyEvent => ({ type: 'demand', shard: 's0', sealedThroughSeq: seq, revision: seq })),
  fc.constant<PolicyEvent>({ type: 'pause', kind: null }),
  fc.constant<PolicyEvent>({ type: 'resume', kind: 'gc' }),
);
/** One activation's events: each unit has at most one result of a type in flight. */
const activation = fc.record({
  messages: fc.array(message, { maxLength: 6 }),
  results: fc.uniqueArray(result, { maxLength: 6, selector: (e) => `${'unitId' in e ? e.unitId : ''}/${e.type}` }),
  timer: fc.boolean(),
});

it('any arrival order of the same results gives one batch order', () => {
  fc.assert(
    fc.property(activation, fc.infiniteStream(fc.nat()), ({ messages, results, timer }, picks) => {
      const timers: PolicyEvent[] = timer ? [{ type: 'timer' }] : [];
      const arrived = interleave(messages, shuffle(results, picks), picks);
      const expected = canonicalOrder([...messages, ...results, ...timers]);
      expect(canonicalOrder([...arrived, ...timers])).toEqual(expected);
      // Messages first, in the order they came; the timer last.
      expect(expected.slice(0, messages.length)).toEqual(messages);
      if (timer) expect(expected.at(-1)).toEqual({ type: 'timer' });
      expect(expected).toHaveLength(messages.length + results.length + timers.length);
    }),
  );
});

it('results are ordered by unit, then by type', () => {
  const ev = (type: 'committed' | 'prepareFailed', unitId: string) =>
    (type === 'committed' ? { type, unitId, version: 1, attempts: 1 } : { type, unitId, error: '', retryable: true, stalled: false }) as PolicyEvent;
  const out = canonicalOrder([ev('committed', 'merge/s1'), { type: 'demand', shard: 's1', sealedThroughSeq: 4, revision: 4 }, ev('prepareFailed', 'merge/s0'), ev('committed', 'merge/s0')]);
  expect(out.map((e) => `${e.type}${'unitId' in e ? ` ${e.unitId}` : ''}`)).toEqual(['demand', 'committed merge/s0', 'prepareFailed merge/s0', 'committed merge/s1']);
});

function shuffle<T>(xs: T[], picks: Iterator<number>): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = picks.next().value % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** Messages keep their order; results land between them anywhere. */
function interleave(messages: PolicyEvent[], results: PolicyEvent[], picks: Iterator<number>): PolicyEvent[] {
  const out: PolicyEvent[] = [];
  let m = 0;
  let r = 0;
  while (m < messages.length || r < results.length) {
    const takeMessage = r >= results.length || (m < messages.length && picks.next().value % 2 === 0);
    out.push(takeMessage ? messages[m++]! : results[r++]!);
  }
  return out;
}
