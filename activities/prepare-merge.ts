import { Context } from '@temporalio/activity';
import { allocCarried, withScratch, type Alloc } from '../src/storage/scratch';
import { readSealed, readShardSealed } from '../src/storage/generation-store';
import { readGcFloor } from '../src/storage/gc-floor';
import { tableFiles } from '../src/storage/table-files';
import { generationFile, preparedFile } from '../src/storage/layout';
import { storageOf } from '../src/storage/open-storage';
import { readTableMeta } from '../src/storage/table-meta';
import { boundMergeRange, holdingWhileWaiting, prepareReservation, withReservation } from './memory-reservations';
import type { PrepareMergeInput, PrepareMergeResult, PreparedMerge } from './contract';
import type { ActivityDeps } from './deps';
import { ReadAhead } from '../src/util/read-ahead';
import { DERIVED, READ_AHEAD, readGeneration, rounded } from './prepare-io';
import { prepareOnThread } from './prepare-on-thread';
import { fail } from './failures';
import { NewestRowPerKey } from './newest-row-per-key';
import { ProgressReporter } from './progress';
import { costMeter, type CostMeter } from './unit-cost';
import { generationProblem } from './validate-generation';
import { checkpoints, readBatch, resumePoint, valid } from './prepare-resume';

// Preparation of a merge: never touches the base table, so it runs outside the turn.
// With dedup threads (dedup-threads.ts), several generations are checksummed,
// deduplicated and encoded on one while this thread reads the files and reports progress
// (prepare-on-thread.ts); one generation (usually its own batch, nothing to encode) and
// a resumed retry run here. What a retry resumes from: prepare-resume.ts.

/** Longest a preparation waits for an earlier one of its table on this worker (one-at-a-time.ts). */
export const MAX_PREPARATION_WAIT_MS = 10_000;

export function makePrepareMerge(deps: ActivityDeps) {
  return async function prepareMerge(input: PrepareMergeInput): Promise<PrepareMergeResult> {
    // Measured while it works, not while it waits for its reservation or its table's turn on this worker.
    const cost = costMeter(deps);
    const run = async (hold?: string) => {
      const { widened, sealedThroughSeq } = await cost.during(() => widenToSealed(deps, input));
      // A scan of every shard (a few small reads) rides on the result: the table counts it
      // as a snapshot, so a table that merges steadily needs no snapshot activity of its
      // own. Read beside the preparation, its round trips to an object store cost no
      // time; read after the widening, it has seen at least what the preparation covers.
      const scanning = readSealed(deps.dataRoot, input.table);
      scanning.catch(() => undefined); // awaited below; a failed preparation drops it
      // Memory admission: the range is cut to what fits a batch, and its reservation is held while it runs.
      const bounded = await cost.during(() => boundMergeRange(deps, widened));
      const p = await withReservation(
        deps,
        prepareReservation(bounded.bytes),
        () => cost.during(() => prepare(deps, { ...widened, toSeq: bounded.toSeq }, new ProgressReporter('prepareMerge', deps.faults), cost, sealedThroughSeq)),
        hold,
      );
      const scan = await scanning;
      return { ...(bounded.maxBatchBytes === undefined ? p : { ...p, maxBatchBytes: bounded.maxBatchBytes }), scan };
    };
    const ctx = Context.current();
    // Nothing is reported while waiting, so the wait stays well inside the heartbeat timeout.
    const maxWaitMs = Math.min(MAX_PREPARATION_WAIT_MS, (ctx.info.heartbeatTimeoutMs ?? MAX_PREPARATION_WAIT_MS * 4) / 4);
    const gate = deps.preparations;
    const prepared = gate
      ? await holdingWhileWaiting(deps, (hold) => gate.run(input.table, { maxWaitMs, cancelled: ctx.cancelled }, () => run(hold)))
      : await run();
    return { ...prepared, cost: cost.result() };
  };
}

/**
 * The unit's range, extended to what its shard has sealed by now. The table decided the
 * range when it scheduled the unit; what was sealed since (while the activity was queued,
 * or waited behind another preparation of its table) joins this batch instead of waiting
 * for a commit of its own. The result's toSeq says what was covered, and the table takes
 * it as the unit's range (src/policy/events.ts): no other unit of the shard starts after
 * a head that is still preparing. Invalid input is left to prepare() to refuse. The
 * sealed-through seq read here is handed on, so prepare() does not probe the shard again.
 */
async function widenToSealed(deps: ActivityDeps, input: PrepareMergeInput): Promise<{ widened: PrepareMergeInput; sealedThroughSeq?: number }> {
  const { fromSeq, toSeq } = input;
  if (!Number.isSafeInteger(fromSeq) || !Number.isSafeInteger(toSeq) || fromSeq < 1 || fromSeq > toSeq) return { widened: input };
  const sealed = await readShardSealed(tableFiles(deps.dataRoot, input.table), input.shard).catch(() => null);
  if (!sealed) return { widened: input };
  const widened = sealed.sealedThroughSeq > toSeq ? { ...input, toSeq: sealed.sealedThroughSeq } : input;
  return { widened, sealedThroughSeq: sealed.sealedThroughSeq };
}

/**
 * The preparation itself, also run by a commit whose prepared batch was lost
 * (commit-merge.ts). `sealedThroughSeq`: the shard's sealed-through seq when the caller
 * has just read it (sealed seqs only grow, so it is still a valid bound).
 */
export async function prepare(deps: ActivityDeps, input: PrepareMergeInput, progress: ProgressReporter, cost: CostMeter, sealedThroughSeq?: number): Promise<PreparedMerge> {
  const { table, shard, fromSeq, toSeq } = input;
  if (!Number.isSafeInteger(fromSeq) || !Number.isSafeInteger(toSeq) || fromSeq < 1 || fromSeq > toSeq) {
    throw fail('InvalidInput', `prepareMerge: seq range ${fromSeq}..${toSeq} is not valid`);
  }
  const files = tableFiles(deps.dataRoot, table);
  const l = files.layout;
  const out = preparedFile(l, shard, fromSeq, toSeq);
  const t0 = performance.now();
  // The small reads a preparation starts from do not depend on each other: started at
  // once, they cost an object store one round trip instead of five. The input is checked
  // against table.json before any of the others is looked at, and each is awaited, so
  // their errors are the ones a read after another would give.
  const metaRead = readTableMeta(deps.dataRoot, table);
  const sealedRead = sealedThroughSeq === undefined ? readShardSealed(files, shard) : Promise.resolve({ sealedThroughSeq });
  const batchRead = readBatch(out, cost);
  const listing = checkpoints(l, shard, fromSeq, toSeq);
  const floorRead = readGcFloor(files, shard);
  for (const p of [sealedRead, floorRead]) p.catch(() => undefined);
  const meta = await metaRead;
  if (!meta.shards.includes(shard)) throw fail('InvalidInput', `shard ${shard} is not a shard of table ${table}`);
  if (input.key !== meta.key) throw fail('InvalidInput', `key ${input.key} is not table ${table}'s key ${meta.key}`);
  const sealed = await sealedRead;
  if (toSeq > sealed.sealedThroughSeq) {
    throw fail('NotSealed', `table ${table} shard ${shard}: seq ${toSeq} is not sealed (sealed through ${sealed.sealedThroughSeq})`);
  }

  const base = { shard, fromSeq, toSeq, attempt: progress.attempt };
  const total = toSeq - fromSeq + 1;

  const done = valid(await batchRead, meta.key);
  if (done) {
    progress.report({ phase: 'encode', bytesWritten: done.bytes });
    const timings = rounded({ readMs: performance.now() - t0, dedupeMs: 0, encodeMs: 0 });
    return { ...base, preparedPath: out, rows: done.table.numRows, bytes: done.bytes, resumedFromFile: total, resumedVia: 'batch', timings };
  }

  const acc = new NewestRowPerKey(meta.key, toSeq - fromSeq + 1);
  const resume = await resumePoint(l, meta.key, input, progress.previous, cost, listing);
  let next = fromSeq;
  let checkpointThroughSeq: number | undefined;
  if (resume) {
    acc.add(resume.table);
    next = resume.k + 1;
    checkpointThroughSeq = resume.k;
    deps.log?.(`prepareMerge ${table}/${shard} ${fromSeq}..${toSeq}: attempt ${progress.attempt} resumes after checkpoint ${fromSeq}..${resume.k} (from the ${resume.via === 'heartbeat' ? 'last heartbeat' : 'newest file on disk'})`);
  }
  const resumedFromFile = next - fromSeq;
  const resumedVia = resume?.via ?? null;
  // What gc recorded as merged and deleted is not read again (see gc-floor.ts).
  const gcFloor = await floorRead;
  if (gcFloor >= next) {
    deps.log?.(`prepareMerge ${table}/${shard} ${fromSeq}..${toSeq}: seq ${next}..${Math.min(gcFloor, toSeq)} merged and collected before, skipped`);
    next = gcFloor + 1;
  }

  if (deps.dedupThreads && !resume && toSeq > next) {
    const c = { l, key: meta.key, shard, fromSeq, toSeq, next, sealedThroughSeq: sealed.sealedThroughSeq, out, base, resumedFromFile, cost };
    return prepareOnThread(deps, deps.dedupThreads, c, progress);
  }

  // Several generations are read into reused memory (scratch.ts: a new buffer per file
  // cost ~17 ms of page faults per 3.6 MiB here); they are only read until build() has
  // copied the winners out. One generation may be cached as its own batch, so it is
  // read into memory of its own.
  const reads = toSeq > next ? withScratch : (fn: (alloc: Alloc | undefined) => Promise<PreparedMerge>) => fn(undefined);
  return reads(async (alloc) => {
    const timings = { readMs: 0, dedupeMs: 0, encodeMs: 0 };
    let singleBytes: Buffer | undefined;
    const checkpointMs = (deps.prepareCheckpointSecs ?? 10) * 1000;
    let lastCheckpoint = Date.now();
    const ahead = new ReadAhead(next, toSeq, READ_AHEAD, (seq) => readGeneration(generationFile(l, shard, seq), shard, seq, sealed.sealedThroughSeq, cost, alloc));
    try {
      for (let seq = next; seq <= toSeq; seq++) {
        const file = generationFile(l, shard, seq);
        let t = performance.now();
        const { table: gen, bytes: genBytes } = await ahead.take(seq);
        // Read into memory of its own (no alloc): a generation that turns out to be its own batch is kept as read.
        if (!alloc) singleBytes = genBytes;
        const problem = generationProblem(gen, meta.key, seq, acc.schema);
        if (problem) throw fail('InvalidGeneration', `invalid generation ${file}: ${problem}`);
        timings.readMs += performance.now() - t;
        t = performance.now();
        await acc.addYielding(gen);
        timings.dedupeMs += performance.now() - t;
        progress.report({ phase: 'read', filesRead: seq - fromSeq + 1, rowsRead: acc.rowsRead, ...(checkpointThroughSeq ? { checkpointThroughSeq } : {}) });
        await progress.point('read');
        if (seq < toSeq && Date.now() - lastCheckpoint >= checkpointMs) {
          // Encoded into scratch memory of its own, given back once written.
          const written = await withScratch(async (into) => {
            const partial = await acc.encodeYielding(into);
            if (partial) await storageOf(out).put(preparedFile(l, shard, fromSeq, seq), partial.pending, DERIVED);
            return partial?.pending.bytes.byteLength ?? null;
          });
          if (written !== null) {
            cost.wrote(written);
            checkpointThroughSeq = seq;
            progress.report({ phase: 'read', filesRead: seq - fromSeq + 1, rowsRead: acc.rowsRead, checkpointThroughSeq });
          }
          lastCheckpoint = Date.now();
        }
      }
    } finally {
      await ahead.settle();
    }

    progress.report({ phase: 'encode', bytesWritten: 0 });
    await progress.point('encode');
    if (acc.single && next === toSeq && !resume) {
      // One generation with distinct keys is its own newest-row-per-key: the commit reads
      // the (checksummed, immutable) generation file itself; nothing to encode or write.
      const file = generationFile(l, shard, toSeq);
      const bytes = (await storageOf(file).stat(file))?.size ?? 0;
      if (singleBytes) deps.preparedCache?.put(file, singleBytes);
      progress.report({ phase: 'encode', bytesWritten: 0 });
      return { ...base, preparedPath: file, rows: acc.single.numRows, bytes, resumedFromFile, resumedVia, timings: rounded(timings) };
    }
    const t = performance.now();
    // The winners go straight into the batch's file bytes (encode-winners.ts), in carried
    // memory when this worker keeps the batch for its commit, which gives it back.
    const encoded = await acc.encodeYielding(deps.preparedCache ? allocCarried : (n) => Buffer.allocUnsafeSlow(n));
    if (!encoded) return { ...base, preparedPath: null, rows: 0, bytes: 0, resumedFromFile, resumedVia, timings: rounded(timings) };
    await storageOf(out).put(out, encoded.pending, DERIVED);
    deps.preparedCache?.put(out, encoded.pending.bytes);
    const bytes = encoded.pending.bytes.byteLength;
    cost.wrote(bytes);
    timings.encodeMs += performance.now() - t;
    progress.report({ phase: 'encode', bytesWritten: bytes });
    // Checkpoints are left to gc (removed once merged): a checkpoint fromSeq..k is also
    // the prepared batch of a unit fromSeq..k, which may still be waiting to commit.
    return { ...base, preparedPath: out, rows: encoded.rows, bytes, resumedFromFile, resumedVia, timings: rounded(timings) };
  });
}
