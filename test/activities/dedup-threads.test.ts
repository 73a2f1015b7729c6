import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { ApplicationFailure } from '@temporalio/activity';
import { afterEach, describe, expect, it } from 'vitest';
import { DedupThreads, defaultDedupThreads } from '../../activities/dedup-threads';
import { arrow, checksumFile, readIpcFile } from '../../src/storage/arrow';
import { generationFile, tableLayout } from '../../src/storage/layout';
import { makeFixture, run, sealMany, type Fixture } from './helpers';

// What only the thread path has: the worker checks legacy sidecar checksums for it,
// memory must be shared, and a thread that dies fails its jobs (retryably) and is
// replaced for the next one.

let f: Fixture | undefined;
let threads: DedupThreads | undefined;
afterEach(async () => {
  await threads?.close();
  await f?.cleanup();
  threads = undefined;
  f = undefined;
});

const rowsOf = async (file: string): Promise<string[]> => (await readIpcFile(file)).toArray().map((r) => `${r.id}:${r.value}:${r._seq}`).sort();

describe('dedup threads', () => {
  it('a generation from before embedded checksums is verified by its sidecar (and refused when that differs)', async () => {
    threads = new DedupThreads(1);
    f = await makeFixture({ shards: 1, deps: { dedupThreads: threads } });
    await sealMany(f, 's0', 3, 40);
    const l = tableLayout(f.root, f.table);
    // Seq 2 rewritten as an older Turnstile wrote it: plain IPC plus a sidecar digest.
    const file = generationFile(l, 's0', 2);
    const legacy = arrow.tableToIPC(await readIpcFile(file), 'file');
    fs.writeFileSync(file, legacy);
    fs.writeFileSync(checksumFile(file), `${createHash('sha256').update(legacy).digest('hex')} ${legacy.byteLength}\n`);
    const p = await run(f.acts.prepareMerge, [{ table: f.table, key: 'id', shard: 's0', fromSeq: 1, toSeq: 3 }]);
    expect(p).toMatchObject({ fromSeq: 1, toSeq: 3 });
    // The same rows as the newest row per key computed here from the three files.
    const newest = new Map<string, string>();
    for (const seq of [1, 2, 3]) for (const r of (await readIpcFile(generationFile(l, 's0', seq))).toArray()) newest.set(String(r.id), `${r.id}:${r.value}:${r._seq}`);
    expect(await rowsOf(p.preparedPath!)).toEqual([...newest.values()].sort());

    fs.rmSync(p.preparedPath!);
    fs.writeFileSync(checksumFile(file), `${'0'.repeat(64)} ${legacy.byteLength}\n`);
    const err = await run(f.acts.prepareMerge, [{ table: f.table, key: 'id', shard: 's0', fromSeq: 1, toSeq: 3 }]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect([(err as ApplicationFailure).type, (err as ApplicationFailure).nonRetryable]).toEqual(['CorruptGeneration', true]);
    expect((err as ApplicationFailure).message).toMatch(/000000000002\.arrow.*sha256 differs/);
  });

  it('takes only shared memory: bytes a thread could not see are refused before anything is sent', async () => {
    threads = new DedupThreads(1);
    const job = threads.job('id', 1);
    expect(() => job.add('x.arrow', 1, Buffer.alloc(64))).toThrow(/shared memory/);
    job.end();
  });

  it('a thread that dies fails the preparation it held, retryably, and the next one gets a new thread', async () => {
    threads = new DedupThreads(1);
    let release!: () => void;
    let reached!: () => void;
    const atFirstFile = new Promise<void>((r) => (reached = r));
    f = await makeFixture({
      shards: 1,
      deps: {
        dedupThreads: threads,
        faults: {
          freezeProgress: (pt) => {
            if (pt.attempt !== 1 || pt.phase !== 'read') return;
            reached();
            return new Promise<void>((r) => (release = r));
          },
        },
      },
    });
    await sealMany(f, 's0', 3, 200);
    const input = { table: f.table, key: 'id', shard: 's0', fromSeq: 1, toSeq: 3 };
    const first = run(f.acts.prepareMerge, [input]).catch((e: unknown) => e);
    await atFirstFile;
    await threads.close(); // what an uncaught error or an out-of-memory exit of the thread looks like from here
    release();
    const err = await first;
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/dedup thread exited/);
    // Not an ApplicationFailure: Temporal retries it like any other lost worker resource.
    expect(err).not.toBeInstanceOf(ApplicationFailure);
    const again = await run(f.acts.prepareMerge, [input], { attempt: 2 });
    expect(again).toMatchObject({ fromSeq: 1, toSeq: 3 });
    expect(again.rows).toBeGreaterThan(0);
  });

  it('by default one thread fewer than the cores, at most four, and none on two cores or fewer', () => {
    expect([1, 2, 3, 4, 5, 8, 64].map(defaultDedupThreads)).toEqual([0, 0, 2, 3, 4, 4, 4]);
  });

  it('start() warms every thread up with made-up rows and leaves no job behind', async () => {
    threads = new DedupThreads(2);
    await threads.start();
    const job = threads.job('id', 1);
    const built = await job.build();
    expect(built).toMatchObject({ kind: 'built', ipc: null, rows: 0 });
    job.end();
  });
});
