import fs from 'node:fs';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readSealed } from '../../src/storage/generation-store';
import { sealedFile, shardDir, tableLayout, TEMP_MARKER } from '../../src/storage/layout';
import { lanceTableDir } from '../../src/storage/lance-table';
import { readGcFloor } from '../../src/storage/gc-floor';
import { tableFiles } from '../../src/storage/table-files';
import { checksumFile } from '../../src/storage/arrow';
import { makeFixture, prepareAndCommit, run, sealMany, tableRows, type Fixture } from './helpers';

let f: Fixture;
beforeEach(async () => {
  f = await makeFixture({ shards: 2 });
});
afterEach(() => f.cleanup());

const old = (file: string) => {
  const t = new Date(Date.now() - 11 * 60_000);
  fs.utimesSync(file, t, t);
};

describe('gc', () => {
  it('deletes only merged generations, merged prepared batches and old temp files; never SEALED.json', async () => {
    await sealMany(f, 's0', 3, 30, [0, 99]);
    await sealMany(f, 's1', 3, 30, [0, 99]);
    await prepareAndCommit(f, 's0', 1, 3);
    await prepareAndCommit(f, 's1', 1, 3);
    await sealMany(f, 's0', 2, 30, [0, 99], 1003);
    await run(f.acts.prepareMerge, [{ table: f.table, key: 'id', shard: 's0', fromSeq: 4, toSeq: 5 }]); // prepared, not merged
    const l = tableLayout(f.root, f.table);
    const oldTemp = path.join(shardDir(l, 's0'), `${TEMP_MARKER}999-dead-000000000009.arrow`);
    const newTemp = path.join(l.prepared, `${TEMP_MARKER}999-live-s0-4-5.arrow`);
    const oldLanceTmp = path.join(lanceTableDir(f.root, f.table), 'data', '.tmp_abandoned');
    for (const t of [oldTemp, newTemp, oldLanceTmp]) fs.writeFileSync(t, 'x');
    old(oldTemp);
    old(oldLanceTmp);
    const snapBefore = await readSealed(f.root, f.table);
    const rowsBefore = await tableRows(f);

    const plan = await run(f.acts.planGc, [{ table: f.table, mergedThrough: [{ shard: 's0', mergedThroughSeq: 3 }, { shard: 's1', mergedThroughSeq: 3 }] }]);
    const names = plan.files.map((p) => path.relative(l.meta, p)).sort();
    expect(names).toEqual(
      ['gen/s0/000000000001.arrow', 'gen/s0/000000000002.arrow', 'gen/s0/000000000003.arrow', 'gen/s1/000000000001.arrow', 'gen/s1/000000000002.arrow', 'gen/s1/000000000003.arrow', 'prepared/s0-1-3.arrow', 'prepared/s1-1-3.arrow'].sort(),
    );
    expect(plan.tempFiles.sort()).toEqual([oldTemp, oldLanceTmp].sort());

    // Checksum sidecars of files written before checksums moved into the files.
    for (const p of [...plan.files, path.join(l.prepared, 's0-4-5.arrow')]) fs.writeFileSync(checksumFile(p), 'legacy');
    const r = await run(f.acts.gc, [{ table: f.table, ...plan }]);
    expect(r.deleted).toBe(10);
    expect(r.bytesFreed).toBeGreaterThan(0);
    for (const p of [...plan.files, ...plan.tempFiles]) expect(fs.existsSync(p)).toBe(false);
    // Legacy sidecars go with their files, and stay with the files that stay.
    for (const p of plan.files) expect(fs.existsSync(checksumFile(p)), checksumFile(p)).toBe(false);
    expect(fs.existsSync(checksumFile(path.join(l.prepared, 's0-4-5.arrow')))).toBe(true);
    expect(fs.existsSync(newTemp)).toBe(true);
    expect(fs.existsSync(path.join(l.prepared, 's0-4-5.arrow'))).toBe(true);
    expect(fs.existsSync(sealedFile(l, 's0'))).toBe(true);
    // The sealed-through seq and revision do not drop when merged files go.
    expect(await readSealed(f.root, f.table)).toEqual(snapBefore);
    expect(await tableRows(f)).toEqual(rowsBefore);
    // And the unmerged tail still merges.
    await prepareAndCommit(f, 's0', 4, 5);
    expect((await tableRows(f)).length).toBeGreaterThanOrEqual(rowsBefore.length);
  });

  it('records what it deleted, so a merge started afresh from seq 1 skips it; an unrecorded missing file still fails', async () => {
    await sealMany(f, 's0', 2, 30, [0, 99]);
    await prepareAndCommit(f, 's0', 1, 2);
    await sealMany(f, 's0', 2, 30, [0, 99], 1002);
    const rowsAfterTwo = await tableRows(f);
    const plan = await run(f.acts.planGc, [{ table: f.table, mergedThrough: [{ shard: 's0', mergedThroughSeq: 2 }, { shard: 's1', mergedThroughSeq: 0 }] }]);
    await run(f.acts.gc, [{ table: f.table, ...plan }]);
    expect(await readGcFloor(tableFiles(f.root, f.table), 's0')).toBe(2);

    // A workflow that lost its watermarks asks for 1..4: only 3..4 are read.
    const p = await run(f.acts.prepareMerge, [{ table: f.table, key: 'id', shard: 's0', fromSeq: 1, toSeq: 4 }]);
    const direct = await run(f.acts.prepareMerge, [{ table: f.table, key: 'id', shard: 's0', fromSeq: 3, toSeq: 4 }]);
    expect(p.rows).toBe(direct.rows);
    await run(f.acts.commitMerge, [{ table: f.table, key: 'id', prepared: p }]);
    expect((await tableRows(f)).length).toBeGreaterThanOrEqual(rowsAfterTwo.length);

    // Deleted by anyone but gc: not recorded, so the unit fails naming the file.
    const l = tableLayout(f.root, f.table);
    await sealMany(f, 's1', 2, 30, [0, 99]);
    const lost = path.join(shardDir(l, 's1'), '000000000001.arrow');
    fs.rmSync(lost);
    const err = await run(f.acts.prepareMerge, [{ table: f.table, key: 'id', shard: 's1', fromSeq: 1, toSeq: 2 }]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect((err as ApplicationFailure).nonRetryable).toBe(true);
    expect((err as ApplicationFailure).message).toContain(lost);
  });

  it('refuses paths that are not its own before deleting anything', async () => {
    await sealMany(f, 's0', 2, 10, [0, 99]);
    const l = tableLayout(f.root, f.table);
    const gen1 = path.join(shardDir(l, 's0'), '000000000001.arrow');
    for (const bad of [sealedFile(l, 's0'), l.tableFile, path.join(f.root, 'elsewhere.arrow'), path.join(shardDir(l, 's0'), '../../../../x/000000000001.arrow')]) {
      const err = await run(f.acts.gc, [{ table: f.table, files: [gen1, bad], tempFiles: [] }]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApplicationFailure);
      expect((err as ApplicationFailure).type).toBe('GcRefused');
      expect(fs.existsSync(gen1)).toBe(true);
    }
    const err = await run(f.acts.gc, [{ table: f.table, files: [], tempFiles: [gen1] }]).catch((e: unknown) => e);
    expect((err as ApplicationFailure).type).toBe('GcRefused');
  });
});
