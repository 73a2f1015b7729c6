import { describe, expect, it } from 'vitest';
import { PreparedCache } from '../../activities/prepared-cache';
import { encodeIpcFile } from '../../src/storage/arrow';
import { tableFromRows, withSeqColumn } from '../../src/storage/records';

const batch = (n: number, seq: number) => withSeqColumn(tableFromRows(Array.from({ length: n }, (_, i) => ({ id: i, value: `v${seq}-${i}` })), 'id'), seq, 'id');
const rows = (t: { toArray(): { id: unknown; value: unknown; _seq: unknown }[] }) => t.toArray().map((r) => `${String(r.id)}:${String(r.value)}:${String(r._seq)}`);

describe('PreparedCache', () => {
  it('gives back the batch it was given, as its table and as the very IPC bytes, once', async () => {
    const cache = new PreparedCache(2 ** 20);
    const b = batch(100, 3);
    const ipc = await encodeIpcFile(b);
    cache.put('p1', ipc);
    expect(cache.bytesHeld).toBe(ipc.byteLength);
    const got = cache.take('p1')!;
    expect(got.ipc).toBe(ipc);
    expect(rows(got.table)).toEqual(rows(b));
    // The checksum is the file's business, not the table's.
    expect([...got.table.schema.metadata.keys()]).toEqual([]);
    expect(cache.take('p1')).toBeUndefined();
    expect(cache.bytesHeld).toBe(0);
  });

  it('drops the oldest batches beyond its bytes, and never holds one larger than all of them', async () => {
    const a = await encodeIpcFile(batch(200, 1));
    const cache = new PreparedCache(a.byteLength * 2 + 10);
    cache.put('a', a);
    cache.put('b', await encodeIpcFile(batch(200, 2)));
    cache.put('c', await encodeIpcFile(batch(200, 3)));
    expect(cache.take('a')).toBeUndefined();
    expect(cache.take('b')).toBeDefined();
    cache.put('huge', await encodeIpcFile(batch(2000, 4)));
    expect(cache.take('huge')).toBeUndefined();
    expect(cache.take('c')).toBeDefined();
  });
});
