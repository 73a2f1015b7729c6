import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backlogOf, writePressure } from '../../src/policy';

describe('writePressure (property 6)', () => {
  const params = fc
    .tuple(fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: 1, max: 10_000 }))
    .map(([soft, span]) => ({ soft, hard: soft + span }));

  it('is 0 at or below soft, 1 at or above hard, monotone and continuous in between', () => {
    fc.assert(
      fc.property(params, fc.integer({ min: 0, max: 25_000 }), ({ soft, hard }, b) => {
        const p = writePressure(b, soft, hard);
        const q = writePressure(b + 1, soft, hard);
        expect(p).toBeGreaterThanOrEqual(0);
        expect(p).toBeLessThanOrEqual(1);
        if (b <= soft) expect(p).toBe(0);
        if (b >= hard) expect(p).toBe(1);
        expect(q).toBeGreaterThanOrEqual(p);
        expect(q - p).toBeLessThanOrEqual(1 / (hard - soft) + 1e-12);
      }),
      { numRuns: 3000 },
    );
  });

  it('is linear between soft and hard', () => {
    expect(writePressure(150, 100, 200)).toBe(0.5);
    expect(writePressure(100, 100, 200)).toBe(0);
    expect(writePressure(101, 100, 200)).toBeCloseTo(0.01);
    expect(writePressure(200, 100, 200)).toBe(1);
    expect(writePressure(5000, 100, 200)).toBe(1);
  });

  it('steps at soft when hard <= soft (the config forbids that policy)', () => {
    expect(writePressure(10, 10, 10)).toBe(0);
    expect(writePressure(11, 10, 10)).toBe(1);
    expect(writePressure(11, 10, 5)).toBe(1);
  });

  it('backlog is the sum of positive per-shard differences', () => {
    const shard = (sealed: number, merged: number) => ({ shard: 's', sealedThroughSeq: sealed, sealedRevision: 0, mergedThroughSeq: merged, heldReason: null });
    expect(backlogOf({ shards: [shard(10, 4), shard(3, 3), shard(2, 5)] })).toBe(6);
  });
});
