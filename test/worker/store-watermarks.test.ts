import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { createTableMeta, sealGeneration } from '../../src/storage/generation-store';
import { tableLayout } from '../../src/storage/layout';
import { SETTLE_MS, StoreWatermarks } from '../../src/worker/store-watermarks';
import { generateRows } from '../../src/writer';
import { freshDataRoot, uniqueName } from '../support/harness';

// The sweep's reads of the generation store, on real files and on the run's S3 server:
// a shard whose directory has not changed since a read where it was already old is
// not read again; a seal, a table created again with other shards, and a directory
// too fresh to trust are read every time.

const rows = (shard: string, shards: string[]) => generateRows({ keys: [0, 100], count: 3, shard, shards });

/** Makes the fs directories of `table` (and its table.json) look untouched for a minute. */
function age(root: string, table: string): void {
  const l = tableLayout(root, table);
  const old = new Date(Date.now() - 60_000);
  const walk = (dir: string) => {
    fs.utimesSync(dir, old, old);
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) walk(path.join(dir, e.name));
      else fs.utimesSync(path.join(dir, e.name), old, old);
    }
  };
  walk(l.meta);
}

const seqs = (r: Record<string, { shard: string; sealedThroughSeq: number }[]>, table: string) => Object.fromEntries((r[table] ?? []).map((s) => [s.shard, s.sealedThroughSeq]));

test('fs: unchanged shards are kept, a seal is read, a table created again is read with its new shards', async () => {
  const root = freshDataRoot('watermarks');
  const a = uniqueName('a');
  const b = uniqueName('b');
  await createTableMeta(root, { name: a, key: 'id', shards: ['s0', 's1'], indices: [] });
  await createTableMeta(root, { name: b, key: 'id', shards: ['s0'], indices: [] });
  await sealGeneration(root, a, 's0', rows('s0', ['s0', 's1']));
  await sealGeneration(root, a, 's0', rows('s0', ['s0', 's1']));
  await sealGeneration(root, b, 's0', rows('s0', ['s0']));
  const w = new StoreWatermarks(root);

  // Fresh directories are never trusted unchanged: read every time.
  expect(seqs(await w.read(), a)).toEqual({ s0: 2, s1: 0 });
  expect(seqs(await w.read(), a)).toEqual({ s0: 2, s1: 0 });
  expect(w.last).toEqual({ shardsRead: 3, shardsKept: 0 });

  age(root, a);
  age(root, b);
  await w.read(); // records the settled times
  expect(w.last).toEqual({ shardsRead: 3, shardsKept: 0 });
  const kept = await w.read();
  expect(w.last).toEqual({ shardsRead: 0, shardsKept: 3 });
  expect(seqs(kept, a)).toEqual({ s0: 2, s1: 0 });
  expect(seqs(kept, b)).toEqual({ s0: 1 });

  // A seal links a file into its shard's directory: that shard alone is read again.
  await sealGeneration(root, a, 's1', rows('s1', ['s0', 's1']));
  expect(seqs(await w.read(), a)).toEqual({ s0: 2, s1: 1 });
  expect(w.last).toEqual({ shardsRead: 1, shardsKept: 2 });

  // b dropped and created again with three shards (a new table.json): all of them read.
  fs.rmSync(tableLayout(root, b).meta, { recursive: true });
  await createTableMeta(root, { name: b, key: 'id', shards: ['s0', 's1', 's2'], indices: [] });
  await sealGeneration(root, b, 's2', rows('s2', ['s0', 's1', 's2']));
  const again = await w.read();
  expect(seqs(again, b)).toEqual({ s0: 0, s1: 0, s2: 1 });
  expect(Object.keys(again).sort()).toEqual([a, b].sort());
  expect(SETTLE_MS).toBeGreaterThanOrEqual(1000);
});

test('S3: no directory times, so every shard is read every time', async () => {
  const root = freshDataRoot('watermarks', 's3');
  const t = uniqueName('t');
  await createTableMeta(root, { name: t, key: 'id', shards: ['s0', 's1'], indices: [] });
  await sealGeneration(root, t, 's1', rows('s1', ['s0', 's1']));
  const w = new StoreWatermarks(root);
  expect(seqs(await w.read(), t)).toEqual({ s0: 0, s1: 1 });
  await sealGeneration(root, t, 's1', rows('s1', ['s0', 's1']));
  expect(seqs(await w.read(), t)).toEqual({ s0: 0, s1: 2 });
  expect(w.last).toEqual({ shardsRead: 2, shardsKept: 0 });
});
