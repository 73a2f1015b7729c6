import { checksumProblem, CorruptArrowFileError } from '../src/storage/arrow';
import { withSharedScratch, type Alloc } from '../src/storage/scratch';
import { notFound } from '../src/storage/storage';
import { generationFile, preparedFile, type TableLayout } from '../src/storage/layout';
import { storageOf } from '../src/storage/open-storage';
import { ReadAhead } from '../src/util/read-ahead';
import type { PreparedMerge } from './contract';
import type { ActivityDeps } from './deps';
import type { DedupReply } from './dedup-protocol';
import type { DedupJob, DedupThreads } from './dedup-threads';
import { fail } from './failures';
import { DERIVED, READ_AHEAD, readFailure, rounded } from './prepare-io';
import type { ProgressReporter } from './progress';
import type { CostMeter } from './unit-cost';

// A preparation of several generations with its CPU work (checksum, decode, dedup,
// encode) on a dedup thread (dedup-threads.ts): this thread reads the files, reports
// progress and writes what comes back.

/** A generation's bytes in shared memory from `alloc` (a backend that does not read into it is copied). */
async function readShared(file: string, alloc: Alloc): Promise<Buffer> {
  const buf = await storageOf(file).read(file, alloc);
  if (buf === null) throw notFound(file);
  if (buf.buffer instanceof SharedArrayBuffer) return buf;
  const copy = alloc(buf.byteLength);
  buf.copy(copy);
  return copy;
}

/** Adds a generation to a thread's dedup, checking it as readIpcFileBytes would (a legacy sidecar checksum is checked here). */
async function addOnThread(job: DedupJob, file: string, seq: number, bytes: Buffer): Promise<Extract<DedupReply, { kind: 'added' }>> {
  let r = await job.add(file, seq, bytes);
  if (r.kind === 'no-checksum') {
    const problem = await checksumProblem(file, bytes, true);
    r = problem ? { kind: 'corrupt', reason: problem } : await job.add(file, seq, bytes, true);
  }
  if (r.kind === 'added') return r;
  if (r.kind === 'corrupt') throw new CorruptArrowFileError(file, r.reason);
  if (r.kind === 'invalid') throw fail('InvalidGeneration', `invalid generation ${file}: ${r.problem}`);
  throw new Error(`dedup thread: ${r.kind === 'error' ? r.message : `unexpected ${r.kind} reply to add`}`);
}

/** The winners so far as IPC file bytes of their own, or null when there are none. */
async function buildOnThread(job: DedupJob): Promise<Extract<DedupReply, { kind: 'built' }> & { bytes: Buffer | null }> {
  const r = await job.build();
  if (r.kind !== 'built') throw new Error(`dedup thread: ${r.kind === 'error' ? r.message : `unexpected ${r.kind} reply to build`}`);
  return { ...r, bytes: r.ipc ? Buffer.from(r.ipc.buffer, r.ipc.byteOffset, r.ipc.byteLength) : null };
}

export interface ThreadPrep {
  l: TableLayout;
  key: string;
  shard: string;
  fromSeq: number;
  toSeq: number;
  next: number;
  sealedThroughSeq: number;
  out: string;
  base: { shard: string; fromSeq: number; toSeq: number; attempt: number };
  resumedFromFile: number;
  cost: CostMeter;
}

/**
 * prepare()'s read, dedup and encode of several generations, with the CPU work on a
 * dedup thread (dedup-threads.ts): this thread only reads the files (into shared
 * memory, lent until the job ends), reports progress and writes what comes back.
 * Checkpoints as in prepare(); a retry that resumes from one runs in this thread.
 */
export async function prepareOnThread(deps: ActivityDeps, threads: DedupThreads, c: ThreadPrep, progress: ProgressReporter): Promise<PreparedMerge> {
  const { l, shard, fromSeq, toSeq } = c;
  const job = threads.job(c.key, toSeq - c.next + 1);
  try {
    return await withSharedScratch(async (alloc) => {
      const timings = { readMs: 0, dedupeMs: 0, encodeMs: 0 };
      const checkpointMs = (deps.prepareCheckpointSecs ?? 10) * 1000;
      let lastCheckpoint = Date.now();
      let checkpointThroughSeq: number | undefined;
      const ahead = new ReadAhead(c.next, toSeq, READ_AHEAD, (seq) => readShared(generationFile(l, shard, seq), alloc));
      try {
        for (let seq = c.next; seq <= toSeq; seq++) {
          const file = generationFile(l, shard, seq);
          const t = performance.now();
          let added: Extract<DedupReply, { kind: 'added' }>;
          try {
            const bytes = await ahead.take(seq);
            c.cost.read(bytes.byteLength);
            added = await addOnThread(job, file, seq, bytes);
          } catch (err) {
            throw readFailure(err, file, shard, seq, c.sealedThroughSeq);
          }
          timings.readMs += performance.now() - t - added.dedupeMs;
          timings.dedupeMs += added.dedupeMs;
          progress.report({ phase: 'read', filesRead: seq - fromSeq + 1, rowsRead: added.rowsRead, ...(checkpointThroughSeq ? { checkpointThroughSeq } : {}) });
          await progress.point('read');
          if (seq < toSeq && Date.now() - lastCheckpoint >= checkpointMs) {
            const partial = await buildOnThread(job);
            if (partial.bytes) {
              await storageOf(c.out).put(preparedFile(l, shard, fromSeq, seq), partial.bytes, DERIVED);
              c.cost.wrote(partial.bytes.byteLength);
              checkpointThroughSeq = seq;
              progress.report({ phase: 'read', filesRead: seq - fromSeq + 1, rowsRead: added.rowsRead, checkpointThroughSeq });
            }
            lastCheckpoint = Date.now();
          }
        }
      } finally {
        await ahead.settle();
      }
      progress.report({ phase: 'encode', bytesWritten: 0 });
      await progress.point('encode');
      const built = await buildOnThread(job);
      timings.dedupeMs += built.dedupeMs;
      const done = { resumedFromFile: c.resumedFromFile, resumedVia: null };
      if (!built.bytes) return { ...c.base, preparedPath: null, rows: 0, bytes: 0, ...done, timings: rounded(timings) };
      const t = performance.now();
      await storageOf(c.out).put(c.out, built.bytes, DERIVED);
      c.cost.wrote(built.bytes.byteLength);
      deps.preparedCache?.put(c.out, built.bytes);
      timings.encodeMs += built.encodeMs + performance.now() - t;
      progress.report({ phase: 'encode', bytesWritten: built.bytes.byteLength });
      return { ...c.base, preparedPath: c.out, rows: built.rows, bytes: built.bytes.byteLength, ...done, timings: rounded(timings) };
    });
  } finally {
    job.end();
  }
}
