import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { SEQ_COLUMN } from '../../src/messages/names';
import { freePort } from '../../src/server/ports';
import { readIpcFile } from '../../src/storage/arrow';
import { createTableMeta, readShardSealed, sealGeneration } from '../../src/storage/generation-store';
import { generationFile, tableLayout } from '../../src/storage/layout';
import { storageAt } from '../../src/storage/open-storage';
import { S3Storage } from '../../src/storage/s3-storage';
import { StorageEscapeError } from '../../src/storage/storage';
import { raiseGcFloor, readGcFloor } from '../../src/storage/gc-floor';
import { tableFiles } from '../../src/storage/table-files';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import { freshDataRoot, uniqueName } from '../support/harness';
import { inject } from 'vitest';

// The storage interface against the real S3 server of the run (SeaweedFS, see
// global-setup.ts): conditional creates race for real, names cannot climb out of the
// prefix, and a wrong bucket, credentials or endpoint is one line.

let root: string;
beforeAll(() => {
  root = freshDataRoot('s3store', 's3');
});

function sealInChild(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'fixtures/seal-many.ts'), ...args], { cwd: PROJECT_ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`child exited ${code}: ${err}`))));
  });
}

const rows = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ id: from + i, v: `r${from + i}` }));

describe('S3 backend', () => {
  test('of 12 concurrent creates of one key from separate clients exactly one wins, and its bytes stay', async () => {
    const key = `${root}/race/${uniqueName('k')}`;
    // Separate instances: separate connections, so the PUTs really are in flight together.
    const stores = Array.from({ length: 12 }, () => new S3Storage(root));
    const won = await Promise.all(stores.map((s, i) => s.putIfAbsent(key, `writer ${i}`)));
    expect(won.filter(Boolean)).toHaveLength(1);
    const winner = won.indexOf(true);
    expect((await storageAt(root).read(key))?.toString()).toBe(`writer ${winner}`);
  });

  test('a seal whose seq another writer took meanwhile gets the conflict and lands on the next seq', async () => {
    const table = uniqueName('race');
    await createTableMeta(root, { name: table, key: 'id', shards: ['s0'], indices: [] });
    expect((await sealGeneration(root, table, 's0', rows(0, 5))).seq).toBe(1);
    // Another host claims seq 2 behind this process's back (its cached next seq is 2).
    const l = tableLayout(root, table);
    expect(await new S3Storage(root).putIfAbsent(generationFile(l, 's0', 2), 'taken')).toBe(true);
    const r = await sealGeneration(root, table, 's0', rows(5, 5));
    expect(r.seq).toBe(3);
    expect((await storageAt(root).read(generationFile(l, 's0', 2)))?.toString()).toBe('taken');
    expect((await readShardSealed(tableFiles(root, table), 's0')).sealedThroughSeq).toBe(3);
  });

  test('seqs are dense under concurrent sealer processes: no seq taken twice, none skipped', async () => {
    const table = uniqueName('procs');
    await createTableMeta(root, { name: table, key: 'id', shards: ['s0'], indices: [] });
    // Separate processes race for real (one process queues its own seals per shard).
    await Promise.all([0, 1, 2, 3].map((w) => sealInChild([root, table, 's0', '6', `p${w}`])));
    expect((await readShardSealed(tableFiles(root, table), 's0')).sealedThroughSeq).toBe(24);
    const l = tableLayout(root, table);
    const tags = new Set<string>();
    for (let seq = 1; seq <= 24; seq++) {
      const t = await readIpcFile(generationFile(l, 's0', seq));
      expect([...(t.getChild(SEQ_COLUMN)!.toArray() as BigInt64Array)]).toEqual([BigInt(seq)]);
      tags.add(String(t.getChild('value')!.get(0)));
    }
    expect(tags.size).toBe(24); // every seal landed exactly once
    expect(await storageAt(root).read(`${root}/_turnstile/${table}/gen/s0/${'0'.repeat(10)}25.arrow`)).toBeNull();
  }, 90_000);

  test('If-Match: a stale etag loses, the current one wins; the gc floor only grows', async () => {
    const s = storageAt(root);
    const key = `${root}/cas/${uniqueName('k')}`;
    expect(await s.putIfMatch(key, 'a', 'no-such-etag')).toBe(false); // missing object
    expect(await s.putIfMatch(key, 'a', null)).toBe(true);
    const v1 = (await s.readVersioned(key))!;
    expect(await s.putIfMatch(key, 'b', v1.etag)).toBe(true);
    expect(await s.putIfMatch(key, 'c', v1.etag)).toBe(false);
    expect((await s.read(key))?.toString()).toBe('b');

    const table = uniqueName('floor');
    await createTableMeta(root, { name: table, key: 'id', shards: ['s0'], indices: [] });
    await Promise.all([7, 3, 9, 5].map((seq) => raiseGcFloor(tableFiles(root, table), 's0', seq)));
    expect(await readGcFloor(tableFiles(root, table), 's0')).toBe(9);
  });

  test('names cannot leave the prefix', async () => {
    const s = storageAt(root);
    for (const loc of [`${root}/../escaped`, `${root}/a/../../escaped`, 's3://other-bucket/x', `${root}x/y`, '/etc/passwd']) {
      await expect(s.read(loc), loc).rejects.toBeInstanceOf(StorageEscapeError);
      await expect(s.putIfAbsent(loc, 'x'), loc).rejects.toBeInstanceOf(StorageEscapeError);
    }
    await expect(createTableMeta(root, { name: '../escaped', key: 'id', shards: ['s0'], indices: [] })).rejects.toThrow(/not valid/);
    await expect(createTableMeta(root, { name: 'ok', key: 'id', shards: ['../../x'], indices: [] })).rejects.toThrow(/not valid/);
    // The filesystem backend refuses the same way.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-escape-'));
    await expect(storageAt(dir).read(path.join(dir, '..', 'x'))).rejects.toBeInstanceOf(StorageEscapeError);
    await expect(storageAt(dir).read('/etc/passwd')).rejects.toBeInstanceOf(StorageEscapeError);
    fs.rmSync(dir, { recursive: true });
  });
});

describe('a storage root that cannot be used is one line at start', () => {
  const cli = (env: Record<string, string>) =>
    spawnSync(process.execPath, [path.join(PROJECT_ROOT, 'scripts', 'turnstile.mjs'), 'table', 'list'], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 });

  test.each([
    ['a missing bucket', () => ({ TURNSTILE_DATA: 's3://no-such-bucket-here/p' }), /bucket no-such-bucket-here does not exist/],
    ['wrong credentials', () => ({ TURNSTILE_DATA: `s3://${inject('s3').bucket}/p`, AWS_SECRET_ACCESS_KEY: 'wrong' }), /denied: check AWS_ACCESS_KEY_ID/],
    ['an unreachable endpoint', async () => ({ TURNSTILE_DATA: `s3://${inject('s3').bucket}/p`, AWS_ENDPOINT_URL: `http://127.0.0.1:${await freePort()}` }), /unreachable/],
  ])('%s', async (_what, envOf, line) => {
    const r = cli({ ...inject('s3').env, ...(await envOf()) });
    expect(r.status, r.stderr).toBe(1);
    const lines = r.stderr.trim().split('\n');
    expect(lines, r.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(/^turnstile: TURNSTILE_DATA=s3:\/\//);
    expect(lines[0]).toMatch(line);
  });
});
