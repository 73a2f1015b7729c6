import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTableMeta, readSealed } from '../../src/storage/generation-store';
import { shardOfKey } from '../../src/storage/routing';
import { generateRows, OverBacklogError, writeGeneration, type Demand } from '../../src/writer';
import { settleSealedHints } from '../../src/storage/sealed-hint';
import { openTable, type TableHandle } from '../../src/storage/table-handle';

const shards = ['s0', 's1', 's2', 's3'];
let root: string;
let table: TableHandle;
beforeEach(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-writer-'));
  await createTableMeta(root, { name: 't', key: 'id', shards, indices: [] });
  table = await openTable(root, 't');
});
afterEach(async () => {
  await settleSealedHints(); // a hint written in the background would race the removal
  fs.rmSync(root, { recursive: true, force: true });
});

const rows = (seed = 1) => generateRows({ keys: [0, 99], count: 5, shard: 's2', shards, seed });

describe('writer', () => {
  it('generateRows is deterministic and routes every key to the shard', () => {
    expect(rows(7)).toEqual(rows(7));
    expect(rows(7)).not.toEqual(rows(8));
    for (const r of generateRows({ keys: [0, 999], shard: 's1', shards, seed: 3 })) expect(shardOfKey(r.id, shards)).toBe('s1');
    expect(() => generateRows({ keys: [0, 9], count: 50, shard: 's1', shards })).toThrow(/route to shard s1; asked for 50/);
  });

  it('waits writePressure * maxWriteDelayMs before sealing, then signals the demand', async () => {
    const slept: number[] = [];
    const demands: Demand[] = [];
    const fresh = { writePressure: 0.1, backlog: 3, hardBacklog: 100, maxWriteDelayMs: 400 };
    const r = await writeGeneration({
      table,
      shard: 's2',
      rows: rows(),
      pressure: { writePressure: 0.25, backlog: 60, hardBacklog: 100, maxWriteDelayMs: 400 },
      sleep: async (ms) => {
        slept.push(ms);
        // The delay comes before the seal: nothing sealed yet.
        expect((await readSealed(root, 't')).revision).toBe(0);
      },
      signal: async (d) => {
        demands.push(d);
        return fresh;
      },
    });
    expect(slept).toEqual([100]);
    expect(r).toMatchObject({ seq: 1, revision: 1, delayedMs: 100, pressure: fresh });
    expect(demands).toEqual([{ shard: 's2', sealedThroughSeq: 1, revision: 1, bytes: r.bytes }]);
    expect(r.bytes).toBeGreaterThan(0);
  });

  it('really waits (no injected sleep)', async () => {
    const t0 = Date.now();
    await writeGeneration({ table, shard: 's2', rows: rows(), pressure: { writePressure: 0.5, backlog: 1, hardBacklog: 10, maxWriteDelayMs: 300 } });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(145);
  });

  it('refuses at hardBacklog with a retryable error saying by how much', async () => {
    const p = { writePressure: 1, backlog: 130, hardBacklog: 100, maxWriteDelayMs: 1000 };
    const err = await writeGeneration({ table, shard: 's2', rows: rows(), pressure: p }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OverBacklogError);
    expect((err as OverBacklogError).retryable).toBe(true);
    expect((err as Error).message).toBe('table t: backlog 130 is 30 over hardBacklog 100; retry later');
    expect((await readSealed(root, 't')).revision).toBe(0);
  });

  it('a failed signal does not undo or hide the seal', async () => {
    const r = await writeGeneration({ table, shard: 's2', rows: rows(), signal: () => Promise.reject(new Error('no server')) });
    expect(r.seq).toBe(1);
    expect(r.signalError).toBe('no server');
  });
});
