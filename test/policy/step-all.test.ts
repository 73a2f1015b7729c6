import { expect, it } from 'vitest';
import { step, stepAll } from '../../src/policy';
import { commits, committed, prepared, prepares, twoMergesReady } from './helpers';

// Events of one workflow activation happened at the same instant; deciding after each
// one would hand the turn to whichever event was queued first.

it('events of one instant are all applied before the turn is granted', () => {
  const d = twoMergesReady();
  expect(d.state.turn?.unitId).toBe('merge/s0');
  const bumped = d.at(2500).send({ type: 'bump', bump: { target: { kind: 'optimize' }, class: 1, reason: 'now', expiresAtMs: 60_000 } });
  expect(prepares(bumped).map((p) => p.unit.id)).toEqual(['optimize']);

  const together = stepAll(d.state, [committed('merge/s0'), prepared('optimize')], 3000);
  expect(commits(together.decisions).map((c) => c.unit.id)).toEqual(['optimize']);

  // One at a time, the merge that was already waiting would have taken the turn.
  const first = step(d.state, committed('merge/s0'), 3000);
  expect(commits(first.decisions).map((c) => c.unit.id)).toEqual(['merge/s1']);
});

it('stepAll of one event is step', () => {
  const d = twoMergesReady();
  expect(stepAll(d.state, [committed('merge/s0')], 3000)).toEqual(step(d.state, committed('merge/s0'), 3000));
});
