import { expect, test } from 'vitest';
import { ReadAhead } from '../../src/util/read-ahead';

/** Reads that finish when told to, recording which are in flight. */
function controlledReads() {
  const pending = new Map<number, { resolve: (v: string) => void; reject: (e: Error) => void }>();
  let maxInFlight = 0;
  const read = (seq: number) =>
    new Promise<string>((resolve, reject) => {
      pending.set(seq, { resolve, reject });
      maxInFlight = Math.max(maxInFlight, pending.size);
    });
  const finish = (seq: number, err?: Error) => {
    const p = pending.get(seq)!;
    pending.delete(seq);
    if (err) p.reject(err);
    else p.resolve(`gen ${seq}`);
  };
  return { read, finish, pending, maxInFlight: () => maxInFlight };
}

test('reads come back in order, at most depth ahead of the one taken, never past the end', async () => {
  const r = controlledReads();
  const ahead = new ReadAhead(3, 9, 2, r.read);
  const got: string[] = [];
  for (let seq = 3; seq <= 9; seq++) {
    const p = ahead.take(seq);
    expect([...r.pending.keys()].every((s) => s >= seq && s <= Math.min(9, seq + 2))).toBe(true);
    // Finished out of order: the later ones first.
    for (const s of [...r.pending.keys()].sort((a, b) => b - a)) r.finish(s);
    got.push(await p);
  }
  expect(got).toEqual([3, 4, 5, 6, 7, 8, 9].map((s) => `gen ${s}`));
  expect(r.maxInFlight()).toBe(3);
  await ahead.settle();
});

test('a failed read fails where its seq is taken, and settle waits for the reads started after it', async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown) => unhandled.push(e);
  process.on('unhandledRejection', onUnhandled);
  try {
    const r = controlledReads();
    const ahead = new ReadAhead(1, 10, 3, r.read);
    const first = ahead.take(1);
    r.finish(2, new Error('seq 2 missing'));
    r.finish(1);
    expect(await first).toBe('gen 1');
    await expect(ahead.take(2)).rejects.toThrow('seq 2 missing');
    // Seqs 3-5 are still in flight: settle returns only once they are done.
    let settled = false;
    const s = ahead.settle().then(() => (settled = true));
    await new Promise((res) => setTimeout(res, 20));
    expect(settled).toBe(false);
    for (const seq of [...r.pending.keys()]) r.finish(seq, seq === 4 ? new Error('dropped') : undefined);
    await s;
    expect(settled).toBe(true);
    await new Promise((res) => setTimeout(res, 20));
    expect(unhandled).toEqual([]);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});

test('taking a seq out of order is refused', () => {
  const ahead = new ReadAhead(1, 5, 1, async (seq) => seq);
  expect(() => ahead.take(3)).toThrow(/out of order/);
});
