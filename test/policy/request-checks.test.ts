import { expect, it } from 'vitest';
import { checkAwaitMerged, checkSignal } from '../../src/messages/message-check';
import { step } from '../../src/policy';
import { demand, quietTable } from './helpers';

// The table checks (src/policy/request-checks.ts through src/messages/message-check.ts): each
// refusal names what is wrong and what is accepted, on one line.

const table = () => step(quietTable(), demand('s0', 3), 1000).state;

it('a demand or a wait for a shard the table does not have, or a seq past any plausible lag, is refused', () => {
  const st = table();
  expect(checkSignal(st, 'demand', { shard: 's9', sealedThroughSeq: 1, revision: 1 }, 2000).rejected).toEqual(['demand: shard: "s9" is not a shard of t; accepted: s0, s1']);
  expect(checkAwaitMerged(st, { shard: 's9', seq: 1 })).toBe('awaitMerged: shard: "s9" is not a shard of t; accepted: s0, s1');
  expect(checkAwaitMerged(st, { shard: 's0', seq: 100_003 })).toBe(null);
  expect(checkAwaitMerged(st, { shard: 's0', seq: 100_004 })).toBe('awaitMerged: seq: 100004 is beyond anything plausible for t/s0 (sealed through 3); accepted: at most 100003');
  // One bad entry of a demands signal does not drop the others.
  const r = checkSignal(st, 'demands', [demand('s1', 2), { shard: 's7', sealedThroughSeq: 1, revision: 1 }].map(({ shard, sealedThroughSeq, revision }) => ({ shard, sealedThroughSeq, revision })), 2000);
  expect(r.events).toEqual([demand('s1', 2)]);
  expect(r.rejected).toHaveLength(1);
});

it('pausing what is paused, resuming what is not, and bumping a unit that does not exist are refused', () => {
  let st = table();
  expect(checkSignal(st, 'resume', { kind: 'merge' }, 2000).rejected).toEqual(['resume: kind merge of t is not paused']);
  expect(checkSignal(st, 'resume', {}, 2000).rejected).toEqual(['resume: t is not paused']);
  st = step(st, { type: 'pause', kind: 'merge' }, 2000).state;
  expect(checkSignal(st, 'pause', { kind: 'merge' }, 2000).rejected).toEqual(['pause: kind merge of t is already paused']);
  expect(checkSignal(st, 'pause', { kind: 'gc' }, 2000).events).toEqual([{ type: 'pause', kind: 'gc' }]);
  // Judged after the signals of the same activation: pause then resume is fine.
  expect(checkSignal(st, 'resume', { kind: 'gc' }, 2000, { pending: [{ type: 'pause', kind: 'gc' }] }).rejected).toEqual([]);

  expect(checkSignal(st, 'bump', { unitId: 'merge/s1', reason: 'x' }, 2000).rejected).toEqual(['bump: unit: "merge/s1" is not a unit of t now; units now: merge/s0']);
  expect(checkSignal(st, 'bump', { unitId: 'merge/s0', reason: 'x' }, 2000).events).toHaveLength(1);
  // A kind bump is always meaningful: it makes an idle periodic kind due.
  expect(checkSignal(st, 'bump', { kind: 'gc', reason: 'x' }, 2000).events).toHaveLength(1);
  // Shape errors come first, with the field.
  expect(checkSignal(st, 'bump', { kind: 'compact', reason: 'x' }, 2000).rejected).toEqual(['bump: kind: must be one of merge, optimize, index, gc']);
});

it('a held shard makes resume meaningful even when nothing is paused', () => {
  let st = table();
  st = step(st, { type: 'prepareFailed', unitId: 'merge/s0', error: 'corrupt', retryable: false, stalled: false }, 2000).state;
  expect(st.shards[0]!.heldReason).toBe('corrupt');
  expect(checkSignal(st, 'resume', { kind: 'merge' }, 2000).events).toEqual([{ type: 'resume', kind: 'merge' }]);
});
