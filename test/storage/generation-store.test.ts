import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SEQ_COLUMN } from '../../src/messages/names';
import { readIpcFile } from '../../src/storage/arrow';
import {
  createTableMeta,
  listGenerations,
  readSealed,
  readShardSealed,
  readTableMeta,
  sealGeneration,
  TableExistsError,
  TableNotFoundError,
} from '../../src/storage/generation-store';
import { generationFile, sealedFile, shardDir, tableLayout, TEMP_MARKER } from '../../src/storage/layout';
import { raiseGcFloor } from '../../src/storage/gc-floor';
import { tableFiles } from '../../src/storage/table-files';
import { createFileExclusive, settleFileCleanups } from '../../src/storage/atomic-file';
import { settleSealedHints } from '../../src/storage/sealed-hint';
import { sleep } from '../../src/util/sleep';

let root: string;
beforeEach(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-store-'));
  await createTableMeta(root, { name: 't', key: 'id', shards: ['s0'], indices: [] });
});
afterEach(async () => {
  await settleSealedHints(); // a hint written in the background would race the removal
  fs.rmSync(root, { recursive: true, force: true });
});

function runChild(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'fixtures/seal-many.ts'), ...args], {
      cwd: path.join(__dirname, '../..'),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`child exited ${code}: ${err}`))));
  });
}

async function expectDense(n: number): Promise<void> {
  await settleSealedHints();
  const snap = await readSealed(root, 't');
  expect(snap.shards).toEqual([{ shard: 's0', sealedThroughSeq: n, revision: n }]);
  const gens = await listGenerations(root, 't', 's0', 1, n);
  expect(gens.every((g) => g.bytes !== null)).toBe(true);
  for (const g of gens) {
    const t = await readIpcFile(g.path);
    expect([...(t.getChild(SEQ_COLUMN)!.toArray() as BigInt64Array)]).toEqual([BigInt(g.seq)]);
  }
  const left = fs.readdirSync(shardDir(tableLayout(root, 't'), 's0'));
  expect(left.filter((f) => f.includes(TEMP_MARKER) || f.includes('lock'))).toEqual([]);
  expect(left.filter((f) => f.endsWith('.arrow'))).toHaveLength(n);
}

describe('generation store', () => {
  it('table metadata: create once, read back, clear errors', async () => {
    expect(await readTableMeta(root, 't')).toEqual({ name: 't', key: 'id', shards: ['s0'], indices: [] });
    await expect(createTableMeta(root, { name: 't', key: 'id', shards: ['s0'], indices: [] })).rejects.toBeInstanceOf(TableExistsError);
    await expect(readTableMeta(root, 'nope')).rejects.toThrow(/table nope does not exist/);
    await expect(readTableMeta(root, 'nope')).rejects.toBeInstanceOf(TableNotFoundError);
    await expect(sealGeneration(root, 't', 's9', [{ id: 1 }])).rejects.toThrow(/shard s9 is not a shard of table t/);
    await expect(sealGeneration(root, 't', 's0', [])).rejects.toThrow(/no rows/);
    await expect(sealGeneration(root, 't', 's0', [{ value: 'x' }])).rejects.toThrow(/key column id is missing/);
  });

  it('seqs are dense and revisions grow under concurrent sealers in one process', async () => {
    await Promise.all(
      Array.from({ length: 5 }, async (_, w) => {
        for (let i = 0; i < 8; i++) await sealGeneration(root, 't', 's0', [{ id: 1, value: `w${w}-${i}`, n: i }]);
      }),
    );
    await expectDense(40);
  });

  it('seqs are dense under concurrent sealer processes', async () => {
    await Promise.all([0, 1, 2, 3].map((w) => runChild([root, 't', 's0', '6', `p${w}`])));
    await expectDense(24);
  }, 60_000);

  it('a seq another process sealed meanwhile is skipped: the file written carries its own seq', async () => {
    await sealGeneration(root, 't', 's0', [{ id: 1, value: 'mine', n: 1 }]); // this process now expects seq 2 next
    await runChild([root, 't', 's0', '2', 'other']); // seals 2 and 3
    const r = await sealGeneration(root, 't', 's0', [{ id: 1, value: 'mine', n: 4 }]);
    expect(r.seq).toBe(4);
    const t = await readIpcFile(r.path);
    expect([...(t.getChild(SEQ_COLUMN)!.toArray() as BigInt64Array)]).toEqual([4n]);
    expect(t.getChild('value')!.get(0)).toBe('mine');
    expect((await readIpcFile(generationFile(tableLayout(root, 't'), 's0', 2))).getChild('value')!.get(0)).toBe('other-0');
    await expectDense(4);
  }, 60_000);

  it('of sealers racing for one file name exactly one creates it; the others leave nothing behind', async () => {
    const dir = shardDir(tableLayout(root, 't'), 's0');
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, 'race.bin');
    const won = await Promise.all(Array.from({ length: 12 }, (_, i) => createFileExclusive(file, `writer ${i}`)));
    expect(won.filter(Boolean)).toHaveLength(1);
    expect(fs.readFileSync(file, 'utf8')).toBe(`writer ${won.indexOf(true)}`);
    await settleFileCleanups(); // the winner's temp name goes after it returned
    expect(fs.readdirSync(dir)).toEqual(['race.bin']);
  });

  it('bytes still being produced: the temp file opens meanwhile; a failed producer or open leaves nothing and claims nothing', async () => {
    const dir = shardDir(tableLayout(root, 't'), 's0');
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, 'late.bin');
    let tempSeenWhileProducing = false;
    const produced = await createFileExclusive(file, async () => {
      await sleep(20);
      tempSeenWhileProducing = fs.readdirSync(dir).some((n) => n.startsWith(TEMP_MARKER));
      return Buffer.from('late bytes');
    });
    expect(produced).toBe(true);
    expect(tempSeenWhileProducing).toBe(true);
    expect(fs.readFileSync(file, 'utf8')).toBe('late bytes');
    await settleFileCleanups();
    expect(fs.readdirSync(dir)).toEqual(['late.bin']);

    const other = path.join(dir, 'failed.bin');
    await expect(createFileExclusive(other, () => Promise.reject(new Error('encode failed')))).rejects.toThrow('encode failed');
    expect(fs.readdirSync(dir)).toEqual(['late.bin']);
    // The name is still free: a later create takes it.
    expect(await createFileExclusive(other, 'second try')).toBe(true);
    expect(fs.readFileSync(other, 'utf8')).toBe('second try');

    // The open fails (no such directory) while the bytes are produced: the error is the
    // create's, not an unhandled rejection (vitest fails the run on one).
    const nowhere = path.join(dir, 'missing-dir', 'x.bin');
    await expect(
      createFileExclusive(nowhere, async () => {
        await sleep(20);
        return 'x';
      }),
    ).rejects.toMatchObject({ code: 'ENOENT' });
    await settleFileCleanups();
    expect(fs.readdirSync(dir).sort()).toEqual(['failed.bin', 'late.bin']);
  });

  it('bytes patched after their write: the name shows them only patched, and a failed patch leaves nothing and claims nothing', async () => {
    const dir = shardDir(tableLayout(root, 't'), 's0');
    fs.mkdirSync(dir, { recursive: true });
    const size = 3 * 2 ** 20 + 7; // several slices, the last one short
    const bytes = Buffer.alloc(size, 'a');
    let finishedWhileWriting = false;
    const patched = {
      bytes,
      finish: () => {
        // Called while the slices are in flight: the name does not exist yet.
        finishedWhileWriting = !fs.existsSync(path.join(dir, 'patched.bin'));
        return Promise.resolve([
          { at: 0, bytes: Buffer.from('HEAD') },
          { at: size - 4, bytes: Buffer.from('TAIL') },
        ]);
      },
    };
    expect(await createFileExclusive(path.join(dir, 'patched.bin'), () => Promise.resolve(patched))).toBe(true);
    expect(finishedWhileWriting).toBe(true);
    const written = fs.readFileSync(path.join(dir, 'patched.bin'));
    expect(written.byteLength).toBe(size);
    expect(written.subarray(0, 4).toString()).toBe('HEAD');
    expect(written.subarray(size - 4).toString()).toBe('TAIL');
    expect(written.subarray(4, size - 4).every((c) => c === 0x61)).toBe(true);
    expect(bytes.equals(written)).toBe(true); // the caller's buffer holds what the file holds

    // More slices than are written at once (8 x 512 KiB), the last one short: every byte in its place.
    const big = Buffer.from(Array.from({ length: 9 * 2 ** 20 + 3 }, (_, i) => (i * 7919) & 0xff));
    expect(await createFileExclusive(path.join(dir, 'big.bin'), big)).toBe(true);
    expect(fs.readFileSync(path.join(dir, 'big.bin')).equals(big)).toBe(true);
    fs.rmSync(path.join(dir, 'big.bin'));

    const failing = { bytes: Buffer.alloc(size), finish: () => Promise.reject(new Error('digest failed')) };
    await expect(createFileExclusive(path.join(dir, 'unpatched.bin'), () => Promise.resolve(failing))).rejects.toThrow('digest failed');
    await settleFileCleanups();
    expect(fs.readdirSync(dir)).toEqual(['patched.bin']);
    expect(await createFileExclusive(path.join(dir, 'unpatched.bin'), 'second try')).toBe(true);
  });

  it('a crash before the rename is invisible: the next seal takes the same seq', async () => {
    await sealGeneration(root, 't', 's0', [{ id: 1, value: 'a', n: 1 }]);
    // What a crash mid-seal leaves: a temp file and a torn hint (and, from versions that
    // wrote checksum sidecars, the seq-2 sidecar).
    await settleSealedHints();
    const l = tableLayout(root, 't');
    const dir = shardDir(l, 's0');
    fs.writeFileSync(path.join(dir, `${TEMP_MARKER}123-ab-000000000002.arrow`), 'half');
    fs.writeFileSync(path.join(dir, '000000000002.arrow.sha256'), `${'0'.repeat(64)} 4\n`);
    fs.writeFileSync(sealedFile(l, 's0'), '{"sealedThr');
    expect((await readSealed(root, 't')).shards[0]).toEqual({ shard: 's0', sealedThroughSeq: 1, revision: 1 });
    const r = await sealGeneration(root, 't', 's0', [{ id: 1, value: 'b', n: 2 }]);
    expect(r).toMatchObject({ seq: 2, revision: 2 });
    expect((await readIpcFile(r.path)).getChild('value')!.get(0)).toBe('b');
  });

  it('a generation in place is sealed even when the hint fell behind (crash after the rename)', async () => {
    await sealGeneration(root, 't', 's0', [{ id: 1, value: 'a', n: 1 }]);
    await sealGeneration(root, 't', 's0', [{ id: 1, value: 'b', n: 2 }]);
    const l = tableLayout(root, 't');
    await settleSealedHints();
    fs.writeFileSync(sealedFile(l, 's0'), JSON.stringify({ sealedThroughSeq: 1, revision: 1 }));
    expect((await readSealed(root, 't')).shards[0]).toEqual({ shard: 's0', sealedThroughSeq: 2, revision: 2 });
    expect((await sealGeneration(root, 't', 's0', [{ id: 1, value: 'c', n: 3 }])).seq).toBe(3);
  });

  it('a hint far behind is caught up with in a few waves of probes, each seal counted once, at every window boundary', async () => {
    const l = tableLayout(root, 't');
    let sealed = 0;
    for (const n of [0, 1, 2, 9, 10, 17, 23]) {
      for (; sealed < n; ) sealed = (await sealGeneration(root, 't', 's0', [{ id: 1, value: String(sealed), n: sealed }])).seq;
      await settleSealedHints();
      fs.rmSync(sealedFile(l, 's0'), { force: true });
      // The probes counted through a storage of this test's own (the backend is shared).
      const base = tableFiles(root, 't');
      const files = { ...base, storage: Object.create(base.storage) as typeof base.storage };
      let inFlight = 0;
      let waves = 0;
      const stat = base.storage.stat.bind(base.storage);
      files.storage.stat = async (file: string) => {
        if (inFlight++ === 0) waves++;
        try {
          return await stat(file);
        } finally {
          inFlight--;
        }
      };
      expect((await readShardSealed(files, 's0')).sealedThroughSeq, `${n} sealed`).toBe(n);
      // One probe, then windows of 8 until one finds a file missing.
      expect(waves, `${n} sealed`).toBe(n === 0 ? 1 : 2 + Math.floor((n - 1) / 8));
    }
  });

  it('files gc deleted never lower the sealed-through seq, even with no hint left', async () => {
    for (let i = 1; i <= 3; i++) await sealGeneration(root, 't', 's0', [{ id: 1, value: String(i), n: i }]);
    const l = tableLayout(root, 't');
    await raiseGcFloor(tableFiles(root, 't'), 's0', 3);
    for (let seq = 1; seq <= 3; seq++) fs.rmSync(generationFile(l, 's0', seq));
    await settleSealedHints();
    fs.rmSync(sealedFile(l, 's0'));
    expect((await readSealed(root, 't')).shards[0]!.sealedThroughSeq).toBe(3);
    expect((await sealGeneration(root, 't', 's0', [{ id: 1, value: 'd', n: 4 }])).seq).toBe(4);
  });

  it('stores the key as a non-nullable Int64 and _seq as Int64; refuses keys of another shard', async () => {
    await createTableMeta(root, { name: 'm', key: 'id', shards: ['s0', 's1', 's2'], indices: [] });
    const { shardOfKey } = await import('../../src/storage/routing');
    const k = [1, 2, 3, 4, 5, 6].find((x) => shardOfKey(x, ['s0', 's1', 's2']) === 's1')!;
    const other = [1, 2, 3, 4, 5, 6].find((x) => shardOfKey(x, ['s0', 's1', 's2']) !== 's1')!;
    const r = await sealGeneration(root, 'm', 's1', [{ id: k, value: 'x', n: 1.5 }]);
    const t = await readIpcFile(r.path);
    expect(t.schema.fields.map((f) => `${f.name}:${String(f.type)}:${f.nullable}`)).toEqual([
      'id:Int64:false',
      'value:Utf8:true',
      'n:Float64:true',
      '_seq:Int64:false',
    ]);
    await expect(sealGeneration(root, 'm', 's1', [{ id: other, value: 'x', n: 1 }])).rejects.toThrow(/belongs to shard s\d, not s1/);
  });
});

describe('table schema', () => {
  it('the first seal fixes the columns; a seal of another shape is refused', async () => {
    await sealGeneration(root, 't', 's0', [{ id: 1, value: 'a', n: 1.5 }]);
    const second = await sealGeneration(root, 't', 's0', [{ n: 2, value: 'b', id: 2 }]); // order does not matter
    expect((await readIpcFile(second.path)).schema.names).toEqual(['id', 'value', 'n', SEQ_COLUMN]);
    await expect(sealGeneration(root, 't', 's0', [{ id: 3, value: 'c' }])).rejects.toThrow(/do not match the table's \{id: Int64, value: Utf8, n: Float64, _seq: Int64\}/);
    await expect(sealGeneration(root, 't', 's0', [{ id: 3, value: 4, n: 1 }])).rejects.toThrow(/do not match/);
    expect((await readSealed(root, 't')).shards[0]!.sealedThroughSeq).toBe(2);
  });
});
