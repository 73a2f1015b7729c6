import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { initialState } from '../../src/policy';
import { firstDueMs, firstPhase } from '../../src/policy/phase';
import { NEVER } from '../../src/policy/time';
import { simPolicy } from '../../src/sim';

describe('first periodic due time of a new table', () => {
  it('falls within one period of the start, the same for the same name and kind', () => {
    fc.assert(
      fc.property(fc.string(), fc.constantFrom('optimize', 'index', 'gc'), fc.integer({ min: 0, max: 30 * 86_400 }), fc.integer({ min: 0, max: 2 ** 40 }), (name, kind, secs, now) => {
        const phase = firstPhase(name, kind);
        expect(phase).toBeGreaterThan(0);
        expect(phase).toBeLessThanOrEqual(1);
        expect(firstPhase(name, kind)).toBe(phase);
        const due = firstDueMs(now, secs, phase);
        if (secs === 0) expect(due).toBe(NEVER);
        else {
          expect(due).toBeGreaterThan(now);
          expect(due).toBeLessThanOrEqual(now + secs * 1000);
        }
      }),
    );
  });

  it('tables created in the same second are spread over the period, not due together', () => {
    const policy = simPolicy();
    for (const prefix of ['many-4242-', 'orders_', 't']) {
      const states = Array.from({ length: 1000 }, (_, i) => initialState({ table: `${prefix}${i}`, key: 'id', shards: ['s0'], policy, nowMs: 0 }));
      for (const kind of ['optimize', 'index', 'gc'] as const) {
        const period = policy.periodSecs[kind] * 1000;
        const tenths = Array.from({ length: 10 }, () => 0);
        for (const s of states) tenths[Math.min(9, Math.floor((s.dueAtMs[kind] - 1) / (period / 10)))]!++;
        // 100 per tenth if uniform; a wave would put most of them in one.
        expect(Math.max(...tenths), `${prefix} ${kind}: ${tenths.join(' ')}`).toBeLessThan(150);
        expect(Math.min(...tenths), `${prefix} ${kind}: ${tenths.join(' ')}`).toBeGreaterThan(50);
      }
    }
  });
});
