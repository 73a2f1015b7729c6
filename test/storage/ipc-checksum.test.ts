import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { arrow, checksumFile, CorruptArrowFileError, encodeIpcFile, readIpcFile, writeIpcFileAtomic } from '../../src/storage/arrow';
import { NewestRowPerKey } from '../../activities/newest-row-per-key';
import { storageOf } from '../../src/storage/open-storage';
import { createTableMeta, sealGeneration } from '../../src/storage/generation-store';
import { withSeqColumn } from '../../src/storage/records';
import { settleSealedHints } from '../../src/storage/sealed-hint';
import { CHECKSUM_KEY, CHECKSUMS, embeddedChecksumProblem, encodeChecksumPending } from '../../src/storage/ipc-checksum';
import { finishedBytes } from '../../src/storage/storage';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-checksum-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
let n = 0;

const tableOf = (ids: number[], values: string[]) =>
  arrow.tableFromArrays({ id: Float64Array.from(ids), value: values });

describe('checksum embedded in Arrow IPC files', () => {
  it('reads back what was written, without the checksum key, and with no sidecar', async () => {
    const file = path.join(dir, `${n++}.arrow`);
    // Column values that look like a digest or the zeros it is computed over change nothing.
    const values = ['0'.repeat(16), 'f'.repeat(16), '0'.repeat(64), CHECKSUM_KEY, CHECKSUMS.sha256.key];
    await writeIpcFileAtomic(file, tableOf([1, 2, 3], values));
    const t = await readIpcFile(file);
    expect(t.getChild('value')!.toArray()).toEqual(values);
    expect([...t.schema.metadata.keys()]).toEqual([]);
    expect(fs.existsSync(checksumFile(file))).toBe(false);
    expect(CHECKSUM_KEY).toBe('turnstile.xxh64');
    expect(arrow.tableFromIPC(fs.readFileSync(file)).schema.metadata.get(CHECKSUM_KEY)).toMatch(/^[0-9a-f]{16}$/);
  });

  it('any single changed byte is refused, never decoded into other content', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.integer(), fc.string({ maxLength: 12 })), { minLength: 1, maxLength: 40 }),
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        async (rows, where, xor) => {
          const file = path.join(dir, `${n++}.arrow`);
          await writeIpcFileAtomic(file, tableOf(rows.map((r) => r[0]), rows.map((r) => r[1])));
          const bytes = fs.readFileSync(file);
          const at = where % bytes.length;
          bytes[at] = bytes[at]! ^ xor;
          fs.writeFileSync(file, bytes);
          await expect(readIpcFile(file)).rejects.toBeInstanceOf(CorruptArrowFileError);
          fs.rmSync(file);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a file of over 1 MiB carries the xxh64 of its bytes with the digest zeroed and refuses a changed byte', async () => {
    const file = path.join(dir, `${n++}.arrow`);
    const rows = 40_000; // ~1.3 MiB
    await writeIpcFileAtomic(file, tableOf(Array.from({ length: rows }, (_, i) => i), Array.from({ length: rows }, (_, i) => `value ${i} `.padEnd(24, '.'))));
    const bytes = fs.readFileSync(file);
    expect(bytes.byteLength).toBeGreaterThan(1 << 20);
    expect((await readIpcFile(file)).numRows).toBe(rows);
    // The digest in the file is xxh64 (seed 0) over the file with its copies zeroed,
    // however computed: checked here with the library's own one-shot hash.
    const { default: xxhash } = await import('xxhash-wasm');
    const digest = arrow.tableFromIPC(bytes).schema.metadata.get(CHECKSUM_KEY)!;
    const zeroed = Buffer.from(bytes.toString('latin1').split(digest).join('0'.repeat(16)), 'latin1');
    expect((await xxhash()).h64Raw(zeroed).toString(16).padStart(16, '0')).toBe(digest);
    for (const at of [bytes.byteLength >> 1, 100, bytes.byteLength - 200]) {
      const bad = Buffer.from(bytes);
      bad[at] = bad[at]! ^ 1;
      fs.writeFileSync(file, bad);
      await expect(readIpcFile(file)).rejects.toBeInstanceOf(CorruptArrowFileError);
    }
  });

  it('files written with the sha256 of earlier versions are still verified, and a changed byte in them is refused', async () => {
    const file = path.join(dir, `${n++}.arrow`);
    const rows = 30_000;
    const table = tableOf(Array.from({ length: rows }, (_, i) => i), Array.from({ length: rows }, (_, i) => `old ${i}`));
    const bytes = (await finishedBytes(await encodeChecksumPending(arrow, table, undefined, 'sha256'))) as Buffer;
    const digest = arrow.tableFromIPC(bytes).schema.metadata.get(CHECKSUMS.sha256.key)!;
    expect(digest).toMatch(/^[0-9a-f]{64}$/);
    expect(arrow.tableFromIPC(bytes).schema.metadata.has(CHECKSUM_KEY)).toBe(false);
    const { createHash } = await import('node:crypto');
    const zeroed = Buffer.from(bytes.toString('latin1').split(digest).join('0'.repeat(64)), 'latin1');
    expect(createHash('sha256').update(zeroed).digest('hex')).toBe(digest);
    fs.writeFileSync(file, bytes);
    const back = await readIpcFile(file);
    expect(back.numRows).toBe(rows);
    expect([...back.schema.metadata.keys()]).toEqual([]);
    const bad = Buffer.from(bytes);
    bad[bytes.byteLength >> 1] = bad[bytes.byteLength >> 1]! ^ 4;
    expect(embeddedChecksumProblem(bad)).toMatch(/checksum differs .*turnstile\.sha256/);
    fs.writeFileSync(file, bad);
    await expect(readIpcFile(file)).rejects.toBeInstanceOf(CorruptArrowFileError);
  });

  // Each size takes another way to the file (atomic-file.ts writeProduced): written from
  // this thread (<= 256 KiB), one write through the thread pool (<= 512 KiB), slices
  // written while the digest runs.
  it.each([
    [2_500, 0, 256 * 1024],
    [9_000, 256 * 1024, 512 * 1024],
    [120_000, 4 * 2 ** 20, Infinity],
  ])('a seal of %i rows (its digest patched in before or after its write) is byte for byte the file encoded whole', async (rows, above, upTo) => {
    const root = path.join(dir, `store-${n++}`);
    await createTableMeta(root, { name: 't', key: 'id', shards: ['s0'], indices: [] });
    const table = arrow.tableFromArrays({ id: Int32Array.from({ length: rows }, (_, i) => i), value: Array.from({ length: rows }, (_, i) => `value ${i} `.padEnd(24, '.')) });
    const { seq, path: file } = await sealGeneration(root, 't', 's0', table);
    const bytes = fs.readFileSync(file);
    expect(bytes.byteLength).toBeGreaterThan(above);
    expect(bytes.byteLength).toBeLessThanOrEqual(upTo);
    // The digest does not depend on the placeholder it replaced, so both ways give one file.
    expect(bytes.equals(await encodeIpcFile(withSeqColumn(table, seq, 'id')))).toBe(true);
    expect((await readIpcFile(file)).numRows).toBe(rows);
    await settleSealedHints();
  });

  it('a prepared batch kept in memory is the file written, digest included', async () => {
    const file = path.join(dir, `${n++}.arrow`);
    const rows = 60_000; // ~2 MiB: written in slices while its digest is computed
    const ids = Array.from({ length: rows }, (_, i) => i);
    // Two generations sharing keys: the first one's winners are gathered into the file.
    // Plain strings: tableFromArrays would make them a dictionary, which generations never are.
    const gen = (keys: number[], value: (i: number) => string) => new arrow.Table({ id: arrow.makeVector(Float64Array.from(keys)), value: arrow.vectorFromArray(keys.map(value), new arrow.Utf8()) });
    const acc = new NewestRowPerKey('id', 2);
    acc.add(gen(ids, (i) => `v${i}`.padEnd(24, '.')));
    acc.add(gen(ids.slice(0, rows / 2), (i) => `w${i}`));
    const encoded = (await acc.encodeYielding((b) => Buffer.allocUnsafeSlow(b)))!;
    expect(encoded.gathered).toBe('into the file');
    await storageOf(file).put(file, encoded.pending, { durable: false });
    const kept = encoded.pending.bytes;
    expect(kept.byteLength).toBeGreaterThan(2 ** 20);
    expect(kept.equals(fs.readFileSync(file))).toBe(true);
    expect((await readIpcFile(file)).numRows).toBe(rows);
  });

  it('files from before, with a sidecar and no embedded checksum, are still verified by the sidecar', async () => {
    const file = path.join(dir, `${n++}.arrow`);
    const bytes = arrow.tableToIPC(tableOf([1], ['legacy']), 'file');
    fs.writeFileSync(file, bytes);
    const { createHash } = await import('node:crypto');
    fs.writeFileSync(checksumFile(file), `${createHash('sha256').update(bytes).digest('hex')} ${bytes.byteLength}\n`);
    expect((await readIpcFile(file)).getChild('value')!.get(0)).toBe('legacy');
    fs.writeFileSync(checksumFile(file), `${'0'.repeat(64)} ${bytes.byteLength}\n`);
    await expect(readIpcFile(file)).rejects.toThrow(/sha256 differs/);
  });

  it('a file with no checksum at all is refused, unless the caller reads a file a user handed in', async () => {
    const file = path.join(dir, `${n++}.arrow`);
    fs.writeFileSync(file, arrow.tableToIPC(tableOf([1], ['plain']), 'file'));
    await expect(readIpcFile(file)).rejects.toThrow(/no checksum/);
    expect((await readIpcFile(file, { checksum: 'optional' })).getChild('value')!.get(0)).toBe('plain');
  });
});
