import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as lancedb from '@lancedb/lancedb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { arrow } from '../../src/storage/arrow';
import { EXACT_DELETION_FILES, lanceVersionBytes, totalBytes } from '../../src/storage/lance-commit-bytes';

// What each Lance version wrote, as read from its manifest's transaction, against the
// files that version actually added on disk.

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-lcb-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

function rows(from: number, n: number, seq: number) {
  const id = new BigInt64Array(n);
  const s = new BigInt64Array(n);
  const value: string[] = [];
  for (let i = 0; i < n; i++) {
    id[i] = BigInt(from + i);
    s[i] = BigInt(seq);
    value.push(`value ${from + i} of ${seq}`);
  }
  return arrow.tableFromArrays({ id, _seq: s, value });
}

/** Size of every file under `sub` of the table directory, by relative path. */
function files(tableDir: string, sub: string): Map<string, number> {
  const out = new Map<string, number>();
  const at = path.join(tableDir, sub);
  if (!fs.existsSync(at)) return out;
  for (const e of fs.readdirSync(at, { recursive: true, withFileTypes: true })) {
    if (e.isFile()) {
      const p = path.join(e.parentPath, e.name);
      out.set(path.relative(tableDir, p), fs.statSync(p).size);
    }
  }
  return out;
}

/** Bytes of the files under `sub` that are in `after` and not in `before`. */
function added(before: Map<string, number>, after: Map<string, number>): number {
  let n = 0;
  for (const [p, size] of after) if (!before.has(p)) n += size;
  return n;
}

const upsert = (tbl: lancedb.Table, data: ReturnType<typeof rows>) =>
  tbl.mergeInsert('id').whenMatchedUpdateAll({ where: 'target._seq < source._seq' }).whenNotMatchedInsertAll().execute(data);

describe('lanceVersionBytes', () => {
  for (const v2 of [true, false]) {
    it(`an upsert: exactly the data and deletion files it added, and its manifest (${v2 ? 'V2' : 'V1'} manifest names)`, async () => {
      const db = await lancedb.connect(dir);
      const tbl = await db.createTable('t', rows(0, 4000, 1), { enableV2ManifestPaths: v2 });
      const tdir = path.join(dir, 't.lance');
      const v0 = await tbl.version();
      const before = { data: files(tdir, 'data'), del: files(tdir, '_deletions'), versions: files(tdir, '_versions') };
      const r = await upsert(tbl, rows(2000, 4000, 2)); // 2,000 updated, 2,000 inserted
      const after = { data: files(tdir, 'data'), del: files(tdir, '_deletions'), versions: files(tdir, '_versions') };
      const [b] = await lanceVersionBytes(tdir, v0, r.version);
      expect(b).toMatchObject({ version: r.version, op: 'update', dataWritten: added(before.data, after.data), deletionsWritten: added(before.del, after.del) });
      expect(b!.dataWritten).toBeGreaterThan(0);
      expect(b!.deletionsWritten).toBeGreaterThan(0);
      const manifest = added(before.versions, after.versions);
      // The manifest, plus the same transaction once more in its own file under _transactions/.
      expect(b!.metadataWritten).toBeGreaterThan(manifest);
      expect(b!.metadataWritten).toBeLessThan(2 * manifest);
      expect(b!.rewrittenRead).toBe(0);
    });
  }

  it(`more than ${EXACT_DELETION_FILES} deletion files: ${EXACT_DELETION_FILES} stat'ed, the rest estimated from them, within 5%`, async () => {
    const db = await lancedb.connect(dir);
    const fragments = 60;
    const tbl = await db.createTable('t', rows(0, 100, 1));
    for (let k = 1; k < fragments; k++) await tbl.add(rows(k * 100, 100, 1));
    const tdir = path.join(dir, 't.lance');
    // Replaces a different number of rows in each fragment, so deletion files differ in size.
    const ids = Array.from({ length: fragments }, (_, k) => Array.from({ length: 1 + (k % 40) }, (_, i) => k * 100 + i * 2)).flat();
    const data = arrow.tableFromArrays({ id: BigInt64Array.from(ids.map(BigInt)), _seq: new BigInt64Array(ids.length).fill(2n), value: ids.map((i) => `new ${i}`) });
    const v0 = await tbl.version();
    const del = files(tdir, '_deletions');
    const r = await upsert(tbl, data);
    const [b] = await lanceVersionBytes(tdir, v0, r.version);
    expect(b!.estimatedDeletionFiles).toBe(fragments - EXACT_DELETION_FILES);
    const actual = added(del, files(tdir, '_deletions'));
    expect(b!.deletionsWritten / actual).toBeGreaterThan(0.95);
    expect(b!.deletionsWritten / actual).toBeLessThan(1.05);
  });

  it('a compaction: reads the fragments it replaced (data and deletions) whole, writes the compacted one', async () => {
    const db = await lancedb.connect(dir);
    const tbl = await db.createTable('t', rows(0, 3000, 1));
    for (let k = 1; k <= 4; k++) await upsert(tbl, rows(k * 1500, 3000, k + 1));
    const tdir = path.join(dir, 't.lance');
    const v0 = await tbl.version();
    const data = files(tdir, 'data');
    const old = [...data.values()].reduce((a, b) => a + b, 0) + [...files(tdir, '_deletions').values()].reduce((a, b) => a + b, 0);
    const r = await tbl.optimize({ cleanupOlderThan: new Date(Date.now() - 3600_000) });
    expect(r.compaction.fragmentsRemoved).toBe(5); // every fragment was small: all were rewritten
    const list = await lanceVersionBytes(tdir, v0, await tbl.version());
    expect(list.map((v) => v.op)).toEqual(['reserveFragments', 'rewrite']);
    const t = totalBytes(list);
    expect(t.rewrittenRead).toBe(old);
    expect(t.dataWritten).toBe(added(data, files(tdir, 'data')));
  });

  it('an index build: the files of its segment; an optimize that folds rows in: the new segment, and the one it replaced', async () => {
    const db = await lancedb.connect(dir);
    const tbl = await db.createTable('t', rows(0, 5000, 1));
    const tdir = path.join(dir, 't.lance');
    let v0 = await tbl.version();
    let before = files(tdir, '_indices');
    await tbl.createIndex('id', { config: lancedb.Index.btree() });
    const [built] = await lanceVersionBytes(tdir, v0, await tbl.version());
    const segment = added(before, files(tdir, '_indices'));
    expect(built).toMatchObject({ op: 'createIndex', indexWritten: segment, indexReplaced: 0 });
    expect(segment).toBeGreaterThan(0);

    await tbl.add(rows(5000, 1000, 1));
    v0 = await tbl.version();
    before = files(tdir, '_indices');
    await tbl.optimize({ cleanupOlderThan: new Date(Date.now() - 3600_000) });
    const t = totalBytes(await lanceVersionBytes(tdir, v0, await tbl.version()));
    expect(t.indexWritten).toBe(added(before, files(tdir, '_indices')));
    expect(t.indexReplaced).toBe(segment);
  });

  it('counts only the operations asked for, and a version whose manifest is gone as nothing', async () => {
    const db = await lancedb.connect(dir);
    const tbl = await db.createTable('t', rows(0, 1000, 1));
    const tdir = path.join(dir, 't.lance');
    const v0 = await tbl.version();
    await tbl.add(rows(1000, 1000, 1));
    await tbl.createIndex('id', { config: lancedb.Index.btree() });
    const list = await lanceVersionBytes(tdir, v0, await tbl.version());
    expect(list.map((v) => v.op)).toEqual(['append', 'createIndex']);
    const onlyIndex = totalBytes(list, new Set(['createIndex']));
    expect(onlyIndex.dataWritten).toBe(0);
    expect(onlyIndex.indexWritten).toBe(list[1]!.indexWritten);
    expect(totalBytes(list).dataWritten).toBe(list[0]!.dataWritten);
    expect(list[0]!.dataWritten).toBeGreaterThan(0);

    // V2 manifest names count down from u64::MAX.
    fs.rmSync(path.join(tdir, '_versions', `${(2n ** 64n - 1n - BigInt(v0 + 1)).toString().padStart(20, '0')}.manifest`));
    const [gone] = await lanceVersionBytes(tdir, v0, v0 + 1);
    expect(gone).toEqual({ version: v0 + 1, op: null, dataWritten: 0, deletionsWritten: 0, indexWritten: 0, metadataWritten: 0, rewrittenRead: 0, indexReplaced: 0, estimatedDeletionFiles: 0 });
  });

  it('refuses a manifest that is not one', async () => {
    const db = await lancedb.connect(dir);
    const tbl = await db.createTable('t', rows(0, 10, 1));
    const tdir = path.join(dir, 't.lance');
    const v = await tbl.version();
    const name = fs.readdirSync(path.join(tdir, '_versions')).find((f) => f.endsWith('.manifest'))!;
    fs.writeFileSync(path.join(tdir, '_versions', name), 'not a manifest at all');
    await expect(lanceVersionBytes(tdir, v - 1, v)).rejects.toThrow(/no LANC footer/);
  });
});
