import { readIpcFileBytes, CorruptArrowFileError, type ArrowTable } from '../src/storage/arrow';
import type { Alloc } from '../src/storage/scratch';
import type { PrepareTimings } from './contract';
import { fail, isNotFound } from './failures';
import type { CostMeter } from './unit-cost';

// What both ways of preparing a merge share (prepare-merge.ts on this thread,
// prepare-on-thread.ts with a dedup thread): how generations are read, how a failed read
// is reported, how the batch is written.

/**
 * Prepared batches and checkpoints are derived from durable generations, so they are
 * written without fsync: after an OS crash a lost one is prepared again (the commit
 * fails with PreparedMissing) and a damaged one fails its checksum (prepare-merge.ts's loadValid skips it,
 * the commit fails with CorruptPrepared); no seal depends on them. The fsync of a
 * multi-megabyte batch, on a disk shared with other writers, cost tens to hundreds of
 * ms inside the preparation.
 */
export const DERIVED = { durable: false };

/**
 * Generations read ahead of the one being deduplicated (read-ahead.ts). Every generation
 * of a unit is held until its batch is built anyway, so reading ahead adds no memory.
 * On SeaweedFS a preparation of 15-20 small generations spent ~6 ms a read waiting.
 */
export const READ_AHEAD = 4;

export async function readGeneration(file: string, shard: string, seq: number, sealedThrough: number, cost: CostMeter, alloc?: Alloc): Promise<{ table: ArrowTable; bytes: Buffer }> {
  try {
    const r = await readIpcFileBytes(file, alloc ? { alloc } : {});
    cost.read(r.bytes.byteLength);
    return r;
  } catch (err) {
    throw readFailure(err, file, shard, seq, sealedThrough);
  }
}

/** A generation's read error as the activity's failure: missing and corrupt files are the operator's to see. */
export function readFailure(err: unknown, file: string, shard: string, seq: number, sealedThrough: number): unknown {
  if (isNotFound(err)) return fail('MissingGeneration', `generation ${file} (shard ${shard} seq ${seq}) is missing, though the shard is sealed through ${sealedThrough}`);
  if (err instanceof CorruptArrowFileError) return fail('CorruptGeneration', `corrupt generation ${err.message}`);
  return err;
}

/** Timings rounded to whole ms, as results report them. */
export const rounded = (t: PrepareTimings): PrepareTimings => ({ readMs: Math.round(t.readMs), dedupeMs: Math.round(t.dedupeMs), encodeMs: Math.round(t.encodeMs) });
