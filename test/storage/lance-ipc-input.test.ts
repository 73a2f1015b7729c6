import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { arrow, encodeIpcFile } from '../../src/storage/arrow';
import { acceptEncodedIpc, EncodedIpc, encodeForLance } from '../../src/storage/lance-ipc-input';
import { conditionalUpsert, openLanceTable, openOrCreateLanceTable } from '../../src/storage/lance-table';
import { withScratch } from '../../src/storage/scratch';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-lance-ipc-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const batch = (ids: number[], seq: number, v: (id: number) => string) =>
  arrow.tableFromArrays({ id: BigInt64Array.from(ids.map(BigInt)), name: ids.map(v), _seq: BigInt64Array.from(ids.map(() => BigInt(seq))) });

describe('handing lancedb pre-encoded IPC', () => {
  it('passes an EncodedIpc through lancedb’s own encoder unchanged', async () => {
    acceptEncodedIpc();
    const require = createRequire(__filename);
    const mod = require(path.join(path.dirname(require.resolve('@lancedb/lancedb')), 'arrow.js')) as { fromDataToBuffer(d: unknown): Promise<Buffer> };
    await withScratch(async (alloc) => {
      const enc = await encodeForLance(batch([1, 2], 1, String), alloc);
      expect(enc).toBeInstanceOf(EncodedIpc);
      expect(await mod.fromDataToBuffer(enc)).toBe(enc.bytes);
      expect(arrow.tableFromIPC(enc.bytes).numRows).toBe(2);
    });
  });

  it('merges through it with the same last-writer-wins result, twice with reused memory', async () => {
    const first = batch([1, 2, 3], 1, (i) => `a${i}`);
    const tbl = await openOrCreateLanceTable(dir, 't', 'id', first.schema);
    expect(await conditionalUpsert(tbl, 'id', first)).toMatchObject({ inserted: 3, updated: 0 });
    // Newer seq wins for 2 and 3, 4 is new; an older seq for 1 changes nothing.
    expect(await conditionalUpsert(tbl, 'id', batch([2, 3, 4], 2, (i) => `b${i}`))).toMatchObject({ inserted: 1, updated: 2 });
    expect(await conditionalUpsert(tbl, 'id', batch([1], 0, () => 'old'))).toMatchObject({ inserted: 0, updated: 0 });
    const rows = (await (await openLanceTable(dir, 't'))!.query().toArray()).map((r) => `${r.id}:${r.name}`).sort();
    expect(rows).toEqual(['1:a1', '2:b2', '3:b3', '4:b4']);
  });

  it('merges the bytes it is handed (a checksummed IPC file, as prepared batches are written), not the table', async () => {
    const first = batch([1, 2], 1, (i) => `a${i}`);
    const tbl = await openOrCreateLanceTable(dir, 't', 'id', first.schema);
    // The table says seq 1 rows 1, 2; the bytes say seq 2 rows 2, 3: the bytes are what Lance gets.
    const ipc = await encodeIpcFile(batch([2, 3], 2, (i) => `b${i}`));
    expect(await conditionalUpsert(tbl, 'id', first, { ipc })).toMatchObject({ inserted: 2, updated: 0 });
    const rows = (await (await openLanceTable(dir, 't'))!.query().toArray()).map((r) => `${r.id}:${r.name}:${r._seq}`).sort();
    expect(rows).toEqual(['2:b2:2', '3:b3:2']);
  });
});
