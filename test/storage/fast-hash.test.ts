import xxhash from 'xxhash-wasm';
import { describe, expect, it } from 'vitest';
import { fastHashReady, xxh64Hex, xxh64Stream } from '../../src/storage/fast-hash';

const bytesOf = (n: number): Buffer => {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (Math.imul(i, 2654435761) >>> 24) & 0xff;
  return b;
};

describe('xxh64', () => {
  it('matches the published vectors', async () => {
    await fastHashReady;
    // xxHash's reference values, seed 0.
    expect(xxh64Hex(Buffer.alloc(0))).toBe('ef46db3751d8e999');
    expect(xxh64Hex(Buffer.from('a'))).toBe('d24ec4f1a98c6e5b');
    expect(xxh64Hex(Buffer.from('abc'))).toBe('44bc2cf5ad770999');
  });

  it('fed in slices, gives the one-shot hash at every length around the slice size', async () => {
    await fastHashReady;
    const ref = await xxhash();
    for (const n of [1, 31, 32, 33, 2 ** 20 - 1, 2 ** 20, 2 ** 20 + 1, 3 * 2 ** 20 + 12_345]) {
      const b = bytesOf(n);
      expect(xxh64Hex(b), `length ${n}`).toBe(ref.h64Raw(b).toString(16).padStart(16, '0'));
      // Updates that cut the input anywhere give the same digest.
      const s = xxh64Stream();
      const cut = Math.floor(n / 3);
      s.update(b.subarray(0, cut));
      s.update(b.subarray(cut));
      expect(s.digestHex(), `length ${n} cut at ${cut}`).toBe(xxh64Hex(b));
    }
  });
});
