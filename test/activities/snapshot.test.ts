import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeFixture, prepareAndCommit, run, sealMany, type Fixture } from './helpers';

let f: Fixture;
beforeEach(async () => {
  f = await makeFixture({ shards: 2 });
});
afterEach(() => f.cleanup());

describe('snapshot', () => {
  it('revisions only grow with seals and do not move when gc deletes merged files', async () => {
    const snap = () => run(f.acts.snapshot, [{ table: f.table }]);
    expect(await snap()).toEqual({ shards: [{ shard: 's0', sealedThroughSeq: 0, revision: 0 }, { shard: 's1', sealedThroughSeq: 0, revision: 0 }], revision: 0 });
    let last = 0;
    for (let i = 0; i < 3; i++) {
      await sealMany(f, i % 2 === 0 ? 's0' : 's1', 1, 5, [0, 99]);
      const s = await snap();
      expect(s.revision).toBeGreaterThan(last);
      last = s.revision;
    }
    await prepareAndCommit(f, 's0', 1, 2);
    await prepareAndCommit(f, 's1', 1, 1);
    const before = await snap();
    const plan = await run(f.acts.planGc, [{ table: f.table, mergedThrough: [{ shard: 's0', mergedThroughSeq: 2 }, { shard: 's1', mergedThroughSeq: 1 }] }]);
    // s0: generations 1, 2 and their prepared batch; s1: generation 1, which was its own
    // prepared batch (one generation with distinct keys is not copied).
    expect(plan.files.length).toBe(4);
    await run(f.acts.gc, [{ table: f.table, ...plan }]);
    expect(await snap()).toEqual(before);
    expect(before.shards.map((s) => s.sealedThroughSeq)).toEqual([2, 1]);
  });

  it('an unknown table fails non-retryably with a clear message', async () => {
    const err = await run(f.acts.snapshot, [{ table: 'nope' }]).catch((e: unknown) => e as { type?: string; nonRetryable?: boolean; message: string });
    expect(err).toMatchObject({ type: 'TableNotFound', nonRetryable: true });
    expect((err as Error).message).toMatch(/table nope does not exist/);
  });
});
