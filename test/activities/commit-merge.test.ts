import { ApplicationFailure } from '@temporalio/activity';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createActivities } from '../../activities';
import { openLanceTable } from '../../src/storage/lance-table';
import { readIpcFile } from '../../src/storage/arrow';
import { generationFile, tableLayout } from '../../src/storage/layout';
import { makeFixture, prepareAndCommit, run, sealMany, start, tableRows, type Fixture } from './helpers';

let f: Fixture;
beforeEach(async () => {
  f = await makeFixture({ shards: 2 });
});
afterEach(() => f.cleanup());

const prep = (fromSeq: number, toSeq: number, shard = 's0') => run(f.acts.prepareMerge, [{ table: f.table, key: 'id', shard, fromSeq, toSeq }]);
const commit = (prepared: Awaited<ReturnType<typeof prep>>, acts = f.acts, attempt = 1) =>
  run(acts.commitMerge, [{ table: f.table, key: 'id', prepared }], { attempt });

/** The rows of a fresh table after sealing `gens` generations (40 rows each) and committing `ranges` once each, in order. */
async function rowsAppliedInOrder(gens: number, ranges: [number, number][]): Promise<Awaited<ReturnType<typeof tableRows>>> {
  const g = await makeFixture({ shards: 2 });
  try {
    await sealMany(g, 's0', gens, 40, [0, 99]);
    for (const [from, to] of ranges) await prepareAndCommit(g, 's0', from, to);
    return await tableRows(g);
  } finally {
    await g.cleanup();
  }
}

describe('commitMerge', () => {
  it('creates the table on first commit with the key as primary key, then upserts', async () => {
    await sealMany(f, 's0', 3, 40, [0, 99]);
    await sealMany(f, 's1', 2, 40, [0, 99]);
    const a = await prepareAndCommit(f, 's0', 1, 3);
    const b = await prepareAndCommit(f, 's1', 1, 2);
    expect(b.version).toBeGreaterThan(a.version);
    const rows = await tableRows(f);
    expect(rows).toHaveLength(a.prepared.rows + b.prepared.rows);
    expect(new Set(rows.map((r) => r.id)).size).toBe(rows.length);
    const tbl = (await openLanceTable(f.root, f.table))!;
    const idField = (await tbl.schema()).fields.find((x) => x.name === 'id')!;
    expect(idField.nullable).toBe(false);
    expect([...idField.metadata.keys()].join()).toMatch(/primary-key/);
  });

  it('applying the same prepared batch twice leaves the rows unchanged', async () => {
    await sealMany(f, 's0', 3, 40, [0, 99]);
    const p = await prep(1, 3);
    const first = await commit(p);
    const before = await tableRows(f);
    const again = await commit(p);
    expect(again.rows).toBe(0);
    expect(await tableRows(f)).toEqual(before);
    expect(before).toHaveLength(p.rows);
    expect(first.rows).toBe(p.rows);
  });

  it('an older batch applied after a newer one changes nothing', async () => {
    await sealMany(f, 's0', 4, 40, [0, 99]);
    const older = await prep(1, 2);
    const newer = await prep(3, 4);
    await commit(newer);
    await commit(older); // inserts keys only the older batch has, replaces nothing
    const expected = await tableRows(f);
    await commit(older);
    await commit(newer);
    expect(await tableRows(f)).toEqual(expected);
    // The same end state as applying them in order.
    expect(await rowsAppliedInOrder(4, [[1, 2], [3, 4]])).toEqual(expected);
  });

  it('a commit whose result was lost, retried, gives the same table', async () => {
    await sealMany(f, 's0', 2, 40, [0, 99]);
    await prepareAndCommit(f, 's0', 1, 1);
    const p = await prep(2, 2);
    const lossy = createActivities({
      dataRoot: f.root,
      faults: {
        afterMergeInsert: ({ attempt }) => {
          if (attempt === 1) throw new Error('connection lost after mergeInsert');
        },
      },
    });
    await expect(commit(p, lossy, 1)).rejects.toThrow('connection lost');
    const afterLost = await tableRows(f);
    const retried = await commit(p, lossy, 2);
    expect(retried.rows).toBe(0);
    expect(await tableRows(f)).toEqual(afterLost);
    expect(await rowsAppliedInOrder(2, [[1, 1], [2, 2]])).toEqual(afterLost);
  });

  it('skips an empty prepared batch without creating a version', async () => {
    await sealMany(f, 's0', 1, 10, [0, 99]);
    const { version } = await prepareAndCommit(f, 's0', 1, 1);
    const empty = { shard: 's0', fromSeq: 2, toSeq: 2, preparedPath: null, rows: 0, bytes: 0, attempt: 1, resumedFromFile: 0, resumedVia: null } as const;
    expect(await commit(empty)).toMatchObject({ version, rows: 0 });
  });

  it('heartbeats the bounded mergeInsert step with its deadline', async () => {
    await sealMany(f, 's0', 1, 10, [0, 99]);
    const p = await prep(1, 1);
    const t0 = Date.now();
    const r = start(f.acts.commitMerge, [{ table: f.table, key: 'id', prepared: p }]);
    await r.result;
    const steps = r.heartbeats as { phase: string; step: string; deadlineMs?: number }[];
    expect(steps.map((h) => h.step)).toEqual(['read-prepared', 'open', 'mergeInsert']);
    expect(steps[2]!.deadlineMs).toBeGreaterThanOrEqual(t0 + 30_000);
  });

  it('a prepared batch lost or damaged (they are written without fsync) is prepared again inside the commit, with the same result', async () => {
    await sealMany(f, 's0', 2, 10, [0, 99]);
    const p = await prep(1, 2);
    const { rmSync, readFileSync, writeFileSync } = await import('node:fs');
    const good = readFileSync(p.preparedPath!);
    rmSync(p.preparedPath!);
    const otherWorker = createActivities({ dataRoot: f.root });
    const r1 = await commit(p, otherWorker);
    expect(r1.rows).toBe(p.rows);
    // Damaged: one byte flipped in the middle; the checksum refuses it and it is rebuilt.
    const bad = Buffer.from(good);
    bad[bad.length >> 1] = bad[bad.length >> 1]! ^ 0xff;
    writeFileSync(p.preparedPath!, bad);
    const r2 = await commit(p, createActivities({ dataRoot: f.root }));
    // Rows already merged: the conditional upsert changes nothing the second time.
    expect(r2.rows).toBe(0);
    expect((await readIpcFile(p.preparedPath!)).numRows).toBe(p.rows);
    expect(await tableRows(f)).toHaveLength(p.rows);
  });

  it('a lost prepared batch whose generation is gone too still fails the commit, naming the generation', async () => {
    await sealMany(f, 's0', 2, 10, [0, 99]);
    const p = await prep(1, 2);
    const { rmSync } = await import('node:fs');
    rmSync(p.preparedPath!);
    const gen = generationFile(tableLayout(f.root, f.table), 's0', 2);
    rmSync(gen);
    const err = await commit(p, createActivities({ dataRoot: f.root })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect((err as ApplicationFailure).type).toBe('MissingGeneration');
  });

  it('on the worker that prepared it, the commit takes the batch from memory instead of reading it again', async () => {
    await sealMany(f, 's0', 2, 10, [0, 99]);
    const p = await prep(1, 2);
    const { rmSync } = await import('node:fs');
    rmSync(p.preparedPath!); // gone from disk: only the in-memory copy can serve it
    const r = await commit(p);
    expect(r.rows).toBe(p.rows);
    expect(await tableRows(f)).toHaveLength(p.rows);
  });

  it('one generation with distinct keys is its own prepared batch: nothing is copied', async () => {
    await sealMany(f, 's0', 1, 10, [0, 99]);
    const p = await prep(1, 1);
    expect(p.preparedPath).toMatch(/gen\/s0\/000000000001\.arrow$/);
    expect(p.timings).toMatchObject({ encodeMs: 0 });
    expect((await commit(p, createActivities({ dataRoot: f.root }))).rows).toBe(10);
  });

  it('batches of several shards commit together in one Lance commit, and re-applying them changes nothing', async () => {
    await sealMany(f, 's0', 2, 10, [0, 99]);
    await sealMany(f, 's1', 3, 10, [0, 99]);
    const a = await prep(1, 2, 's0');
    const b = await prep(1, 3, 's1');
    expect(await openLanceTable(f.root, f.table)).toBeNull();
    const r = await run(f.acts.commitMerge, [{ table: f.table, key: 'id', prepared: a, more: [b] }]);
    expect(r.rows).toBe(a.rows + b.rows);
    const rows = await tableRows(f);
    expect(rows).toHaveLength(a.rows + b.rows);
    const tbl = await openLanceTable(f.root, f.table);
    // Version 1 creates the table with its primary key, 2 is the one merge of both shards.
    expect(await tbl!.version()).toBe(2);
    const again = await run(createActivities({ dataRoot: f.root }).commitMerge, [{ table: f.table, key: 'id', prepared: a, more: [b] }]);
    expect(again.rows).toBe(0);
    expect(await tableRows(f)).toEqual(rows);
  });

  it('a direct merge (no preparation) reads, checks and deduplicates its generation itself, with the result a prepared one gives', async () => {
    const { sealGeneration } = await import('../../src/storage/generation-store');
    const rows = [{ id: 2, value: 'a', n: 1 }, { id: 4, value: 'b', n: 1 }, { id: 2, value: 'a-later', n: 2 }];
    const ids = (await import('../../src/writer')).generateRows({ keys: [0, 200], shard: 's0', shards: f.shards, count: 2 }).map((r) => r.id);
    const routed = rows.map((r) => ({ ...r, id: r.id === 2 ? ids[0]! : ids[1]! }));
    const sealed = await sealGeneration(f.root, f.table, 's0', routed);
    const direct = { shard: 's0', fromSeq: 1, toSeq: 1, preparedPath: null, rows: 0, bytes: sealed.bytes, attempt: 1, resumedFromFile: 0, resumedVia: null, direct: true };
    const r = await run(f.acts.commitMerge, [{ table: f.table, key: 'id', prepared: direct }]);
    expect(r.rows).toBe(2);
    expect((await tableRows(f)).map((x) => [Number(x.id), x.value])).toEqual([[ids[0], 'a-later'], [ids[1], 'b']].sort((a, b) => Number(a[0]) - Number(b[0])));
    // Applying it again changes nothing, and a scan of every shard comes back.
    const again = await run(f.acts.commitMerge, [{ table: f.table, key: 'id', prepared: direct }]);
    expect(again.rows).toBe(0);
    expect(again.scan?.shards.map((x) => [x.shard, x.sealedThroughSeq])).toEqual([['s0', 1], ['s1', 0]]);
  });

  it('a direct merge of a damaged generation fails non-retryably naming the file, as its preparation would', async () => {
    const { sealGeneration } = await import('../../src/storage/generation-store');
    const sealed = await sealGeneration(f.root, f.table, 's0', (await import('../../src/writer')).generateRows({ keys: [0, 200], shard: 's0', shards: f.shards, count: 5 }));
    const fs = await import('node:fs');
    fs.truncateSync(sealed.path, 40);
    const direct = { shard: 's0', fromSeq: 1, toSeq: 1, preparedPath: null, rows: 0, bytes: sealed.bytes, attempt: 1, resumedFromFile: 0, resumedVia: null, direct: true };
    const err = await run(f.acts.commitMerge, [{ table: f.table, key: 'id', prepared: direct }]).then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect((err as ApplicationFailure).nonRetryable).toBe(true);
    expect((err as ApplicationFailure).message).toContain(sealed.path);
  });

  it('two batches of one shard in one commit are refused', async () => {
    await sealMany(f, 's0', 2, 10, [0, 99]);
    const a = await prep(1, 1);
    const b = await prep(2, 2);
    const err = await run(f.acts.commitMerge, [{ table: f.table, key: 'id', prepared: a, more: [b] }]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect((err as Error).message).toMatch(/two batches of one shard/);
  });
});
