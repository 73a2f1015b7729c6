import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as lancedb from '@lancedb/lancedb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createActivities } from '../../activities';
import type { UnitCost } from '../../activities/contract';
import { CpuMeter } from '../../activities/cpu-meter';
import { generationFile, tableLayout } from '../../src/storage/layout';
import { lanceTableDir } from '../../src/storage/lance-table';
import { makeFixture, prepareAndCommit, run, sealMany, type Fixture } from './helpers';

// What activities report they cost (UnitCost), against what they did on disk.

let f: Fixture;
beforeEach(async () => {
  f = await makeFixture({ shards: 2, indices: [{ column: 'id', type: 'btree' }] });
});
afterEach(() => f.cleanup());

/** Bytes of every file under `dir`. */
function dirBytes(dir: string): number {
  if (!fs.existsSync(dir)) return 0;
  let n = 0;
  for (const e of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) if (e.isFile()) n += fs.statSync(path.join(e.parentPath, e.name)).size;
  return n;
}

const size = (file: string): number => fs.statSync(file).size;
const tableDir = () => lanceTableDir(f.root, f.table);
const prep = (shard: string, fromSeq: number, toSeq: number, acts = f.acts) => run(acts.prepareMerge, [{ table: f.table, key: 'id', shard, fromSeq, toSeq }]);

/** Reported bytes over what the disk shows, asserted within `factor` either way. */
function within(reported: number, actual: number, factor: number): void {
  expect(actual).toBeGreaterThan(0);
  expect(reported / actual).toBeGreaterThanOrEqual(1 / factor);
  expect(reported / actual).toBeLessThanOrEqual(factor);
}

describe('what a unit reports it cost', () => {
  it('prepareMerge: the generations it read and the batch it wrote, exactly; a single generation writes nothing', async () => {
    await sealMany(f, 's0', 3, 200, [0, 499]);
    const l = tableLayout(f.root, f.table);
    const p = await prep('s0', 1, 3);
    const gens = [1, 2, 3].reduce((n, seq) => n + size(generationFile(l, 's0', seq)), 0);
    expect(p.cost).toMatchObject({ bytesRead: gens, bytesWritten: size(p.preparedPath!) });
    expect(p.cost!.cpuMs).toBeGreaterThan(0);

    await sealMany(f, 's1', 1, 200, [0, 499]);
    const single = await prep('s1', 1, 1);
    expect(single.preparedPath).toBe(generationFile(l, 's1', 1));
    expect(single.cost).toMatchObject({ bytesRead: size(single.preparedPath!), bytesWritten: 0 });
  });

  it("commitMerge: what Lance wrote, within 1% of the table's growth on disk; the batch it read when this worker did not hold it", async () => {
    await sealMany(f, 's0', 2, 400, [0, 1999]);
    await prepareAndCommit(f, 's0', 1, 2);
    // Overlapping keys: Lance writes new rows and deletion files for the rows replaced.
    await sealMany(f, 's0', 2, 400, [0, 1999], 2000);
    const p = await prep('s0', 3, 4);
    const grown = dirBytes(tableDir());
    // Another worker: it reads the prepared batch from its file.
    const other = createActivities({ dataRoot: f.root });
    const c = await run(other.commitMerge, [{ table: f.table, key: 'id', prepared: p }]);
    expect(c.rows).toBe(p.rows);
    within(c.cost!.bytesWritten, dirBytes(tableDir()) - grown, 1.01);
    expect(c.cost!.bytesRead).toBe(size(p.preparedPath!));
    expect(fs.readdirSync(path.join(tableDir(), '_deletions')).length).toBeGreaterThan(0);

    // The worker that prepared it keeps it in memory: nothing read.
    await sealMany(f, 's1', 2, 400, [0, 1999]);
    const q = await prep('s1', 1, 2);
    const before = dirBytes(tableDir());
    const d = await run(f.acts.commitMerge, [{ table: f.table, key: 'id', prepared: q }]);
    expect(d.cost!.bytesRead).toBe(0);
    within(d.cost!.bytesWritten, dirBytes(tableDir()) - before, 1.01);
    expect(d.cost!.cpuMs).toBeGreaterThan(0);
  });

  it("commitOptimize compacting small fragments: reads them (data and deletions) and writes the table's growth, within 1%", async () => {
    const fragments = 6;
    for (let s = 1; s <= fragments; s++) {
      // Each overlaps some keys of the one before (deletion files), never all of them: every data file stays live.
      await sealMany(f, 's0', 1, 300, [s * 400, s * 400 + 799], 3000 + s);
      await prepareAndCommit(f, 's0', s, s);
    }
    const dir = tableDir();
    expect(fs.readdirSync(path.join(dir, 'data'))).toHaveLength(fragments);
    expect(fs.readdirSync(path.join(dir, '_deletions')).length).toBeGreaterThan(0);
    const data = dirBytes(path.join(dir, 'data'));
    const compacted = data + dirBytes(path.join(dir, '_deletions'));
    const before = dirBytes(dir);
    // Retention of an hour: nothing is pruned, so the growth on disk is what it wrote.
    const r = await run(f.acts.commitOptimize, [{ table: f.table, retentionSecs: 3600 }]);
    expect(r.fragmentsRemoved).toBe(fragments);
    expect(r.versionsPruned).toBe(0);
    within(r.cost!.bytesRead, compacted, 1.01);
    within(r.cost!.bytesWritten, dirBytes(dir) - before, 1.01);
    // Most of it is the rewritten data itself.
    within(r.cost!.bytesWritten, dirBytes(path.join(dir, 'data')) - data, 1.25);
    expect(r.cost!.cpuMs).toBeGreaterThan(0);
  });

  it("ensureIndex: the index files it built, within 1% of the table's growth on disk", async () => {
    await sealMany(f, 's0', 2, 2000, [0, 9999]);
    await prepareAndCommit(f, 's0', 1, 2);
    const before = dirBytes(tableDir());
    const r = await run(f.acts.ensureIndex, [{ table: f.table }]);
    expect(r.built).toHaveLength(1);
    within(r.cost!.bytesWritten, dirBytes(tableDir()) - before, 1.01);
    expect(r.cost!.bytesRead).toBe(0);
  });

  it('plans read metadata only: CPU and no bytes; gc frees bytes but writes none', async () => {
    await sealMany(f, 's0', 2, 100, [0, 499]);
    await prepareAndCommit(f, 's0', 1, 2);
    const costs: UnitCost[] = [];
    const o = await run(f.acts.planOptimize, [{ table: f.table, retentionSecs: 3600 }]);
    const i = await run(f.acts.planIndex, [{ table: f.table }]);
    const g = await run(f.acts.planGc, [{ table: f.table, mergedThrough: [{ shard: 's0', mergedThroughSeq: 2 }] }]);
    costs.push(o.cost!, i.cost!, g.cost!);
    const gc = await run(f.acts.gc, [{ table: f.table, ...g }]);
    expect(gc.bytesFreed).toBeGreaterThan(0);
    costs.push(gc.cost!);
    for (const c of costs) {
      expect(c).toMatchObject({ bytesRead: 0, bytesWritten: 0 });
      expect(c.cpuMs).toBeGreaterThan(0);
    }
  });

  it("activities running at once share the process's CPU: together they report no more than it spent", async () => {
    const g = await makeFixture({ shards: 1 });
    try {
      const meter = new CpuMeter();
      const a = createActivities({ dataRoot: f.root, cpuMeter: meter, dedupThreadCount: 0 });
      const b = createActivities({ dataRoot: g.root, cpuMeter: meter, dedupThreadCount: 0 });
      await sealMany(f, 's0', 6, 3000, [0, 99_999]);
      await sealMany(g, 's0', 6, 3000, [0, 99_999]);
      const cpu0 = process.cpuUsage();
      const [pa, pb] = await Promise.all([prep('s0', 1, 6, a), run(b.prepareMerge, [{ table: g.table, key: 'id', shard: 's0', fromSeq: 1, toSeq: 6 }])]);
      const spent = process.cpuUsage(cpu0);
      const spentMs = (spent.user + spent.system) / 1000;
      expect(pa.cost!.cpuMs).toBeGreaterThan(0);
      expect(pb.cost!.cpuMs).toBeGreaterThan(0);
      // Each alone would have been charged the CPU of both while they overlapped.
      expect(pa.cost!.cpuMs + pb.cost!.cpuMs).toBeLessThanOrEqual(spentMs);
      expect(meter.running).toBe(0);
    } finally {
      await g.cleanup();
    }
  });
});

describe("what an adopted table's commit reports it cost", () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-adopted-cost-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("optimize: reads the small fragments it compacts, writes within 1% of the table's growth", async () => {
    const db = await lancedb.connect(dir);
    const rows = (from: number) => Array.from({ length: 500 }, (_, i) => ({ id: from + i, value: `v${from + i}`, n: from + i }));
    const tbl = await db.createTable('events', rows(0));
    for (let b = 1; b < 5; b++) await tbl.add(rows(b * 500));
    const uri = path.join(dir, 'events.lance');
    const acts = createActivities({ dataRoot: path.join(dir, 'turnstile') });
    const data = dirBytes(path.join(uri, 'data'));
    const before = dirBytes(uri);
    const r = await run(acts.commitAdopted, [{ table: 'events', uri, kind: 'optimize', retentionSecs: 3600, indexAtUnindexedShare: 0.1, conflictRetries: 2, conflictBackoffMaxSecs: 0.1 }]);
    expect(r.fragmentsRemoved).toBe(5);
    within(r.cost!.bytesRead, data, 1.01);
    within(r.cost!.bytesWritten, dirBytes(uri) - before, 1.01);

    const p = await run(acts.planAdopted, [{ table: 'events', uri, kind: 'optimize', retentionSecs: 3600, compactAtSmallFragments: 2, indexAtUnindexedShare: 0.1, pruneAtVersions: 5 }]);
    expect(p.cost).toMatchObject({ bytesRead: 0, bytesWritten: 0 });
  });
});
