import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFileExclusive, settleFileCleanups } from '../../src/storage/atomic-file';
import { TEMP_MARKER } from '../../src/storage/layout';
import { MAX_SPARES, SPARE_IDLE_MS, spareCount, tempPathFor } from '../../src/storage/temp-files';
import { sleep } from '../../src/util/sleep';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-temp-'));
});
afterEach(async () => {
  await settleFileCleanups();
  fs.rmSync(root, { recursive: true, force: true });
});

const temps = (dir: string): string[] => fs.readdirSync(dir).filter((n) => n.includes(TEMP_MARKER));

async function until(cond: () => boolean, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(25)) if (cond()) return true;
  return cond();
}

describe('temp files', () => {
  it('temp names are distinct, in the same directory, and carry the gc marker', () => {
    const file = path.join(root, 'a', '000000000001.arrow');
    const names = Array.from({ length: 1000 }, () => tempPathFor(file));
    expect(new Set(names).size).toBe(1000);
    for (const n of names) {
      expect(path.dirname(n)).toBe(path.dirname(file));
      expect(path.basename(n).startsWith(`${TEMP_MARKER}${process.pid}-`)).toBe(true);
      expect(n.endsWith('-000000000001.arrow')).toBe(true);
    }
  });

  it('a create leaves one spare open in its directory, the next create there uses it, and settling removes it', async () => {
    const dir = path.join(root, 's0');
    fs.mkdirSync(dir);
    expect(await createFileExclusive(path.join(dir, '1.bin'), 'one')).toBe(true);
    // The first temp name goes and the spare comes after the create returned.
    await until(() => spareCount() === 1 && temps(dir).length === 1, 2000);
    const spare = temps(dir);
    expect(spare).toHaveLength(1);
    expect(spareCount()).toBe(1);
    expect(await createFileExclusive(path.join(dir, '2.bin'), 'two')).toBe(true);
    // The second file is the spare's inode: the spare's name is gone (or going), a new spare is open.
    await until(() => !temps(dir).includes(spare[0]!), 2000);
    expect(temps(dir)).not.toContain(spare[0]);
    expect(fs.readFileSync(path.join(dir, '2.bin'), 'utf8')).toBe('two');
    await settleFileCleanups();
    expect(spareCount()).toBe(0);
    expect(fs.readdirSync(dir).sort()).toEqual(['1.bin', '2.bin']);
  });

  it('a spare whose directory was removed and made again: the create still succeeds, with a fresh temp file', async () => {
    const dir = path.join(root, 's0');
    fs.mkdirSync(dir);
    expect(await createFileExclusive(path.join(dir, '1.bin'), 'one')).toBe(true);
    await until(() => spareCount() === 1 && temps(dir).length === 1, 2000);
    expect(spareCount()).toBe(1);
    fs.rmSync(dir, { recursive: true });
    fs.mkdirSync(dir);
    // Patched bytes: what the retry writes must be the finished bytes, patched once.
    const bytes = Buffer.alloc(1024 * 1024 + 5, 'b');
    let finished = 0;
    const patched = {
      bytes,
      finish: () => {
        finished++;
        return Promise.resolve([{ at: 0, bytes: Buffer.from('HEAD') }]);
      },
    };
    expect(await createFileExclusive(path.join(dir, '2.bin'), () => Promise.resolve(patched))).toBe(true);
    const written = fs.readFileSync(path.join(dir, '2.bin'));
    expect(written.subarray(0, 4).toString()).toBe('HEAD');
    expect(written.subarray(4).every((c) => c === 0x62)).toBe(true);
    expect(written.byteLength).toBe(bytes.byteLength);
    expect(finished).toBe(1);
    await settleFileCleanups();
    expect(fs.readdirSync(dir)).toEqual(['2.bin']);
  });

  it('spares are bounded in number, and an idle one is removed by itself', async () => {
    const dirs = Array.from({ length: MAX_SPARES + 3 }, (_, i) => path.join(root, `s${i}`));
    for (const d of dirs) {
      fs.mkdirSync(d);
      expect(await createFileExclusive(path.join(d, 'x.bin'), 'x')).toBe(true);
      await new Promise((r) => setImmediate(r)); // its spare is opened on the next turn
    }
    expect(spareCount()).toBe(MAX_SPARES);
    // The oldest directories' spares were dropped to make room: their temp files go.
    expect(await until(() => dirs.slice(0, 3).every((d) => temps(d).length === 0), 2000)).toBe(true);
    // The rest go once idle, without anyone settling them.
    expect(await until(() => dirs.every((d) => temps(d).length === 0), SPARE_IDLE_MS + 3000)).toBe(true);
    expect(spareCount()).toBe(0);
  });
});
