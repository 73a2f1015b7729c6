import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { arrow, readIpcFile, writeIpcFileAtomic } from '../../src/storage/arrow';
import { TEMP_MARKER } from '../../src/storage/layout';
import { shardOfKey } from '../../src/storage/routing';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-arrow-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('arrow helpers', () => {
  it('is the same Arrow instance lancedb uses', async () => {
    const { makeArrowTable } = await import('@lancedb/lancedb');
    expect(makeArrowTable([{ id: 1 }])).toBeInstanceOf(arrow.Table);
  });

  it('writes atomically (no temp left) and reads back', async () => {
    const file = path.join(dir, 'a.arrow');
    const t = arrow.tableFromArrays({ id: Int32Array.from([1, 2, 3]) });
    const { bytes } = await writeIpcFileAtomic(file, t);
    expect(fs.statSync(file).size).toBe(bytes);
    expect(fs.readdirSync(dir).filter((f) => f.includes(TEMP_MARKER))).toEqual([]);
    expect([...(await readIpcFile(file)).getChild('id')!.toArray()]).toEqual([1, 2, 3]);
  });

  it('names the file when it is truncated or garbage', async () => {
    const file = path.join(dir, 'a.arrow');
    await writeIpcFileAtomic(file, arrow.tableFromArrays({ id: Int32Array.from([1, 2, 3]) }));
    const full = fs.readFileSync(file);
    fs.writeFileSync(file, full.subarray(0, full.length - 20));
    await expect(readIpcFile(file)).rejects.toThrow(`${file}: not a readable Arrow IPC file (no trailing ARROW1 magic: truncated)`);
    fs.writeFileSync(file, 'garbage garbage garbage');
    await expect(readIpcFile(file)).rejects.toThrow(file);
  });
});

describe('routing', () => {
  const shards = ['s0', 's1', 's2', 's3'];
  it('is stable, order-independent and treats 5, 5n and "5" alike', () => {
    for (let k = 0; k < 200; k++) {
      const s = shardOfKey(k, shards);
      expect(shardOfKey(BigInt(k), shards)).toBe(s);
      expect(shardOfKey(String(k), [...shards].reverse())).toBe(s);
    }
  });
  it('spreads keys over every shard', () => {
    const counts = new Map<string, number>();
    for (let k = 0; k < 4000; k++) counts.set(shardOfKey(k, shards), (counts.get(shardOfKey(k, shards)) ?? 0) + 1);
    for (const s of shards) expect(counts.get(s)).toBeGreaterThan(800);
  });
});
