import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { arrow, readIpcFile } from '../../src/storage/arrow';
import { createTableMeta, sealGeneration } from '../../src/storage/generation-store';
import { allocCarried, giveBackCarried, joinInto, scratchKeptBytes, withScratch } from '../../src/storage/scratch';

describe('scratch buffers', () => {
  it('joins chunks in order, letting callbacks queued meanwhile run before it is done', async () => {
    const chunks = Array.from({ length: 6 }, (_, i) => new Uint8Array(2 ** 20).fill(i + 1));
    let ticks = 0;
    const tick = (): void => {
      ticks++;
      if (ticks < 100) setImmediate(tick);
    };
    setImmediate(tick);
    const joined = await joinInto(chunks, (n) => Buffer.alloc(n));
    expect(ticks).toBeGreaterThanOrEqual(2); // 6 MiB: a yield every 2 MiB
    expect(joined.equals(Buffer.concat(chunks))).toBe(true);
  });

  it('lends the same memory again once a use ends, and distinct memory to overlapping uses', async () => {
    const first = await withScratch(async (alloc) => alloc(1_000_000).buffer);
    const again = await withScratch(async (alloc) => alloc(900_000).buffer);
    expect(again).toBe(first);
    await withScratch(async (a) => {
      await withScratch(async (b) => {
        expect(a(1000).buffer).not.toBe(b(1000).buffer);
      });
    });
  });

  it('keeps at most 64 MiB between uses', async () => {
    await Promise.all(Array.from({ length: 6 }, () => withScratch(async (alloc) => alloc(20 * 2 ** 20).byteLength)));
    expect(scratchKeptBytes()).toBeLessThanOrEqual(64 * 2 ** 20);
    expect(scratchKeptBytes()).toBeGreaterThan(0);
  });

  it('carried memory comes back once given back, once only, and never from lent or foreign memory', async () => {
    const a = allocCarried(3 * 2 ** 20);
    const b = allocCarried(3 * 2 ** 20);
    expect(a.buffer).not.toBe(b.buffer);
    // Out until given back: a third use gets memory of its own.
    expect(allocCarried(3 * 2 ** 20).buffer).not.toBe(a.buffer);
    giveBackCarried(a);
    giveBackCarried(a); // a second give-back must not let two users share it
    const c = allocCarried(2 * 2 ** 20);
    expect(c.buffer).toBe(a.buffer);
    expect(allocCarried(2 * 2 ** 20).buffer).not.toBe(a.buffer);
    // Memory the pool did not hand out is not taken in.
    const foreign = Buffer.allocUnsafeSlow(8 * 2 ** 20);
    giveBackCarried(foreign);
    const lent = await withScratch(async (alloc) => {
      const m = alloc(8 * 2 ** 20);
      giveBackCarried(m);
      return m.buffer;
    });
    const d = allocCarried(8 * 2 ** 20);
    expect(d.buffer).not.toBe(foreign.buffer);
    expect(d.buffer).not.toBe(lent);
  });

  it('concurrent seals into different shards each write their own rows (no buffer shared while in use)', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-scratch-'));
    try {
      const meta = await createTableMeta(root, { name: 't', key: 'id', shards: ['a'], indices: [] });
      const other = await createTableMeta(root, { name: 'u', key: 'id', shards: ['a'], indices: [] });
      const rows = (base: number) => arrow.tableFromArrays({ id: BigInt64Array.from({ length: 20_000 }, (_, i) => BigInt(base + i)), v: Float64Array.from({ length: 20_000 }, (_, i) => base + i) });
      const sealed = await Promise.all([
        ...[1, 2, 3].map((g) => sealGeneration(root, 't', 'a', rows(g * 100_000), { meta })),
        ...[4, 5, 6].map((g) => sealGeneration(root, 'u', 'a', rows(g * 100_000), { meta: other })),
      ]);
      const firstIds: number[] = [];
      for (const s of sealed) {
        const t = await readIpcFile(s.path);
        const ids = t.getChild('id')!.toArray() as BigInt64Array;
        const v = t.getChild('v')!.toArray() as Float64Array;
        expect(ids.length).toBe(20_000);
        expect(Number(ids[0]) + 19_999).toBe(Number(ids[19_999]));
        expect(v[123]).toBe(Number(ids[123]));
        firstIds.push(Number(ids[0]));
      }
      expect(firstIds.sort((x, y) => x - y)).toEqual([1, 2, 3, 4, 5, 6].map((g) => g * 100_000));
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
