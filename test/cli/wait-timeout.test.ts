import { describe, expect, it } from 'vitest';
import { timedOutLine, type ShardStanding } from '../../src/cli/wait-timeout';

// The last line of a wait-merged that timed out: how far the shard got and what holds it.

const target = { table: 'orders', shard: 's0', seq: 9, timeoutSecs: 600 };
const standing = (over: Partial<ShardStanding> = {}, shard: Partial<ShardStanding['shards'][number]> = {}): ShardStanding => ({
  paused: false,
  pausedKinds: [],
  shards: [{ shard: 's0', sealedThroughSeq: 9, mergedThroughSeq: 5, heldReason: null, ...shard }],
  ...over,
});

describe('timedOutLine', () => {
  it('says how far the shard got', () => {
    expect(timedOutLine(target, standing())).toBe('wait-merged: timed out after 600 s: orders/s0 merged through seq 5, waiting for 9');
  });

  it('names what holds the shard back', () => {
    expect(timedOutLine(target, standing({ paused: true, pausedKinds: ['merge'] }))).toBe('wait-merged: timed out after 600 s: orders/s0 merged through seq 5, waiting for 9 (table paused)');
    expect(timedOutLine(target, standing({ pausedKinds: ['merge'] }))).toMatch(/waiting for 9 \(merge paused\)$/);
    expect(timedOutLine(target, standing({ pausedKinds: ['gc'] }))).toMatch(/waiting for 9$/);
    expect(timedOutLine(target, standing({}, { heldReason: 'generation 6: bad checksum', sealedThroughSeq: 7 }))).toMatch(/waiting for 9 \(merge of s0 held: generation 6: bad checksum; sealed only through seq 7\)$/);
  });

  it('says so when the table did not answer', () => {
    expect(timedOutLine(target, null, 'the table did not answer its query within 5 s')).toBe('wait-merged: timed out after 600 s: orders/s0 merged through seq unknown (the table did not answer its query within 5 s), waiting for 9');
  });
});
