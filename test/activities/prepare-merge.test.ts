import fs from 'node:fs';
import { ApplicationFailure } from '@temporalio/activity';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { arrow, readIpcFile } from '../../src/storage/arrow';
import { sealGeneration } from '../../src/storage/generation-store';
import { generationFile, preparedFile, tableLayout } from '../../src/storage/layout';
import { settleSealedHints } from '../../src/storage/sealed-hint';
import { generateRows } from '../../src/writer';
import { PreparedCache } from '../../activities/prepared-cache';
import { withScratch, withSharedScratch } from '../../src/storage/scratch';
import { makeFixture, run, sealMany, start, type Fixture } from './helpers';

let f: Fixture;
afterEach(() => f.cleanup());

// Each case runs both ways a worker prepares: on a dedup thread (the default) and on the worker's own thread.
const MODES = [['on a dedup thread', 1], ['on the worker thread', 0]] as const;

const input = (fromSeq: number, toSeq: number, shard = 's0') => ({ table: f.table, key: 'id', shard, fromSeq, toSeq });

async function failure(p: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}

describe.each(MODES)('prepareMerge %s', (_mode, dedupThreadCount) => {
  beforeEach(async () => {
    f = await makeFixture({ shards: 2, deps: { dedupThreadCount } });
  });
  it('keeps the newest row per key, in one prepared batch, reporting read then encode progress', async () => {
    const k = generateRows({ keys: [0, 50], shard: 's0', shards: f.shards }).map((r) => r.id);
    const [a, b, c] = k as [number, number, number];
    await sealGeneration(f.root, f.table, 's0', [{ id: a, value: 'a1', n: 1 }, { id: b, value: 'b1', n: 1 }]);
    await sealGeneration(f.root, f.table, 's0', [{ id: b, value: 'b2', n: 2 }, { id: c, value: 'c2', n: 2 }, { id: c, value: 'c2-later', n: 3 }]);
    await sealGeneration(f.root, f.table, 's0', [{ id: a, value: 'a3', n: 3 }]);
    const r = start(f.acts.prepareMerge, [input(1, 3)]);
    const p = await r.result;
    expect(p).toMatchObject({ shard: 's0', fromSeq: 1, toSeq: 3, rows: 3, attempt: 1, resumedFromFile: 0 });
    expect(p.preparedPath).toBe(preparedFile(tableLayout(f.root, f.table), 's0', 1, 3));
    const t = await readIpcFile(p.preparedPath!);
    const got = t.toArray().map((row) => [Number(row.id), row.value, Number(row._seq)]).sort((x, y) => (x[0] as number) - (y[0] as number));
    expect(got).toEqual([[a, 'a3', 3], [b, 'b2', 2], [c, 'c2-later', 2]].sort((x, y) => (x[0] as number) - (y[0] as number)));
    expect(p.bytes).toBe(fs.statSync(p.preparedPath!).size);
    expect(r.heartbeats).toEqual([
      { phase: 'read', filesRead: 1, rowsRead: 2 },
      { phase: 'read', filesRead: 2, rowsRead: 5 },
      { phase: 'read', filesRead: 3, rowsRead: 6 },
      { phase: 'encode', bytesWritten: 0 },
      { phase: 'encode', bytesWritten: p.bytes },
    ]);
  });

  it('covers what its shard sealed after the unit was decided: the result says the range it took', async () => {
    await sealMany(f, 's0', 3, 20);
    const p = await run(f.acts.prepareMerge, [input(1, 1)]);
    expect(p).toMatchObject({ fromSeq: 1, toSeq: 3 });
    // The newest row per key of all three generations, read back independently.
    const newest = new Map<number, number>();
    for (const seq of [1, 2, 3]) for (const row of (await readIpcFile(generationFile(tableLayout(f.root, f.table), 's0', seq))).toArray()) newest.set(Number(row.id), seq);
    const t = await readIpcFile(p.preparedPath!);
    const got = new Map(t.toArray().map((row) => [Number(row.id), Number(row._seq)]));
    expect(got).toEqual(newest);
    expect([...got.values()]).toContain(3);
    // Nothing sealed past the range: it stays as given.
    const q = await run(f.acts.prepareMerge, [input(2, 3)]);
    expect(q).toMatchObject({ fromSeq: 2, toSeq: 3 });
  });

  it('scans every shard on the way out: a seal of another shard, whose signal never came, is in the result', async () => {
    const s0 = generateRows({ keys: [0, 50], shard: 's0', shards: f.shards, count: 3 });
    const s1 = generateRows({ keys: [0, 50], shard: 's1', shards: f.shards, count: 3 });
    await sealGeneration(f.root, f.table, 's0', s0);
    await sealGeneration(f.root, f.table, 's1', s1);
    await sealGeneration(f.root, f.table, 's1', s1);
    const p = await run(f.acts.prepareMerge, [input(1, 1)]);
    expect(p.scan).toEqual({
      revision: 3,
      shards: [
        { shard: 's0', sealedThroughSeq: 1, revision: 1 },
        { shard: 's1', sealedThroughSeq: 2, revision: 2 },
      ],
    });
    // The same as a snapshot activity would have seen.
    expect(p.scan).toEqual(await run(f.acts.snapshot, [{ table: f.table }]));
  });

  it('a truncated generation fails non-retryably naming the file', async () => {
    await sealMany(f, 's0', 3, 20);
    const file = generationFile(tableLayout(f.root, f.table), 's0', 2);
    const full = fs.readFileSync(file);
    fs.writeFileSync(file, full.subarray(0, Math.floor(full.length / 2)));
    const err = await failure(run(f.acts.prepareMerge, [input(1, 3)]));
    expect(err.nonRetryable).toBe(true);
    expect(err.type).toBe('CorruptGeneration');
    expect(err.message).toContain(file);
  });

  it('a corrupt (garbage) generation fails non-retryably naming the file', async () => {
    await sealMany(f, 's0', 2, 20);
    const file = generationFile(tableLayout(f.root, f.table), 's0', 1);
    const bytes = fs.readFileSync(file);
    bytes.fill(0x7f, 8, bytes.length - 8);
    fs.writeFileSync(file, bytes);
    const err = await failure(run(f.acts.prepareMerge, [input(1, 2)]));
    expect([err.nonRetryable, err.type]).toEqual([true, 'CorruptGeneration']);
    expect(err.message).toContain(file);
  });

  it('one changed byte inside a column, which Arrow itself decodes happily, fails naming the file', async () => {
    await sealMany(f, 's0', 2, 20);
    const file = generationFile(tableLayout(f.root, f.table), 's0', 2);
    const before = await readIpcFile(file);
    const value = String(before.getChild('value')!.get(0));
    const bytes = fs.readFileSync(file);
    const at = bytes.indexOf(Buffer.from(value));
    expect(at).toBeGreaterThan(0);
    bytes[at] = bytes[at]! ^ 0x01;
    fs.writeFileSync(file, bytes);
    // Arrow alone decodes it, to a different value: the checksum embedded in the file is
    // the only thing that catches this.
    expect(String(arrow.tableFromIPC(fs.readFileSync(file)).getChild('value')!.get(0))).not.toBe(value);
    const err = await failure(run(f.acts.prepareMerge, [input(1, 2)]));
    expect([err.nonRetryable, err.type]).toEqual([true, 'CorruptGeneration']);
    expect(err.message).toContain(file);
    expect(err.message).toContain('checksum differs');
  });

  it('a missing generation fails non-retryably naming the file; an unsealed range too', async () => {
    await sealMany(f, 's0', 3, 20);
    await settleSealedHints(); // a hint written in the background would race the removal
    const file = generationFile(tableLayout(f.root, f.table), 's0', 3);
    fs.rmSync(file);
    const err = await failure(run(f.acts.prepareMerge, [input(1, 3)]));
    expect([err.nonRetryable, err.type]).toEqual([true, 'MissingGeneration']);
    expect(err.message).toContain(file);
    const unsealed = await failure(run(f.acts.prepareMerge, [input(1, 9)]));
    expect([unsealed.nonRetryable, unsealed.type]).toEqual([true, 'NotSealed']);
  });

  it('a generation whose _seq is not its seq is invalid', async () => {
    await sealMany(f, 's0', 2, 20);
    const l = tableLayout(f.root, f.table);
    // The file copied with its embedded checksum: the bytes are intact, only the content is wrong.
    fs.copyFileSync(generationFile(l, 's0', 1), generationFile(l, 's0', 2));
    const err = await failure(run(f.acts.prepareMerge, [input(1, 2)]));
    expect([err.nonRetryable, err.type]).toEqual([true, 'InvalidGeneration']);
    expect(err.message).toMatch(/000000000002\.arrow.*_seq 1, expected 2/);
  });

  it('a retry after the batch was written returns it without reading again', async () => {
    await sealMany(f, 's0', 4, 30);
    const first = await run(f.acts.prepareMerge, [input(1, 4)]);
    const r = start(f.acts.prepareMerge, [input(1, 4)], { attempt: 2, heartbeatDetails: { phase: 'encode', bytesWritten: 0 } });
    const again = await r.result;
    // Its cost is reading the batch back: the generations are not read again.
    const cost = { bytesRead: first.bytes, bytesWritten: 0, cpuMs: expect.any(Number) };
    expect(again).toEqual({ ...first, attempt: 2, resumedFromFile: 4, resumedVia: 'batch', timings: { readMs: expect.any(Number), dedupeMs: 0, encodeMs: 0 }, cost });
    expect(r.heartbeats).toEqual([{ phase: 'encode', bytesWritten: first.bytes }]);
  });

  it('a retry resumes reading after the last checkpoint', async () => {
    const cf = await makeFixture({ shards: 2, deps: { prepareCheckpointSecs: 0, dedupThreadCount } });
    try {
      await sealMany(cf, 's0', 5, 30);
      // Attempt 1 freezes after reading file 3 (checkpoints after files 1 and 2 exist), then is cancelled.
      const { createActivities } = await import('../../activities');
      let filesSeen = 0;
      let reached!: () => void;
      const frozen = new Promise<void>((r) => (reached = r));
      const acts = createActivities({
        dataRoot: cf.root,
        prepareCheckpointSecs: 0,
        dedupThreadCount,
        faults: {
          freezeProgress: (pt) => {
            if (pt.attempt !== 1 || pt.phase !== 'read' || ++filesSeen !== 3) return;
            reached();
            return new Promise<void>(() => {});
          },
        },
      });
      const a1 = start(acts.prepareMerge, [{ table: cf.table, key: 'id', shard: 's0', fromSeq: 1, toSeq: 5 }]);
      await frozen;
      a1.env.cancel();
      await expect(a1.result).rejects.toThrow();
      const last = a1.heartbeats.at(-1);
      // The checkpoint after file 3 was not written yet (it follows the freeze point).
      expect(last).toMatchObject({ phase: 'read', filesRead: 3, checkpointThroughSeq: 2 });
      const r2 = start(acts.prepareMerge, [{ table: cf.table, key: 'id', shard: 's0', fromSeq: 1, toSeq: 5 }], { attempt: 2, heartbeatDetails: last });
      const a2 = await r2.result;
      expect([a2.resumedFromFile, a2.resumedVia]).toEqual([2, 'heartbeat']);
      expect(r2.heartbeats[0]).toMatchObject({ phase: 'read', filesRead: 3, checkpointThroughSeq: 2 });

      // The details decide, not the directory: naming the older checkpoint resumes there.
      fs.rmSync(a2.preparedPath!);
      const older = start(acts.prepareMerge, [{ table: cf.table, key: 'id', shard: 's0', fromSeq: 1, toSeq: 5 }], { attempt: 3, heartbeatDetails: { phase: 'read', filesRead: 1, rowsRead: 30, checkpointThroughSeq: 1 } });
      expect(await older.result).toMatchObject({ resumedFromFile: 1, resumedVia: 'heartbeat', rows: a2.rows });
      // Without usable details (the worker died before its heartbeat reached the server)
      // the newest valid checkpoint on disk is used.
      fs.rmSync(a2.preparedPath!);
      const lost = start(acts.prepareMerge, [{ table: cf.table, key: 'id', shard: 's0', fromSeq: 1, toSeq: 5 }], { attempt: 4, heartbeatDetails: { phase: 'read', filesRead: 3, rowsRead: 90, checkpointThroughSeq: 9 } });
      const a4 = await lost.result;
      expect(a4.resumedVia).toBe('scan');
      expect(a4.resumedFromFile).toBeGreaterThanOrEqual(3);
      const fresh = await makeFixture({ shards: 2, deps: { dedupThreadCount } });
      try {
        await sealMany(fresh, 's0', 5, 30);
        const direct = await run(fresh.acts.prepareMerge, [{ table: fresh.table, key: 'id', shard: 's0', fromSeq: 1, toSeq: 5 }]);
        expect(a2.rows).toBe(direct.rows);
        const rowsOf = async (p: string) => (await readIpcFile(p)).toArray().map((x) => JSON.stringify(x, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v))).sort();
        expect(await rowsOf(a2.preparedPath!)).toEqual(await rowsOf(direct.preparedPath!));
      } finally {
        fresh.cleanup();
      }
    } finally {
      cf.cleanup();
    }
  });
});

describe.each(MODES)('prepareMerge %s reads several generations into reused memory', (_mode, dedupThreadCount) => {
  it('the batch it keeps for the commit owns its memory: scratch reused afterwards changes none of it', async () => {
    const cache = new PreparedCache(256 * 2 ** 20);
    const g = await makeFixture({ shards: 1, deps: { preparedCache: cache, dedupThreadCount } });
    try {
      await sealMany(g, 's0', 5, 500);
      // Several generations (read into scratch, copied out by the dedupe), and one (its own
      // batch: the table read is what the cache keeps).
      for (const [fromSeq, toSeq] of [[1, 4], [5, 5]] as const) {
      const p = await run(g.acts.prepareMerge, [{ table: g.table, key: 'id', shard: 's0', fromSeq, toSeq }]);
      const kept = cache.take(p.preparedPath!)!.table;
      const rowsOf = (t: typeof kept): string => t.toArray().map((r) => `${r.id}:${r.value}:${r._seq}`).sort().join(',');
      const before = rowsOf(kept);
      // Lend (and scribble over) every kept scratch buffer, as the next preparation would.
      for (const lend of [withScratch, withSharedScratch]) {
        await lend(async (alloc) => {
          for (let i = 0; i < 64; i++) new Uint8Array(alloc(1).buffer).fill(0xa5);
        });
      }
      expect(rowsOf(kept)).toBe(before);
      expect(rowsOf(kept)).toBe(rowsOf(await readIpcFile(p.preparedPath!)));
      expect(kept.numRows).toBeGreaterThanOrEqual(500);
      }
    } finally {
      await g.cleanup();
    }
  });
});
