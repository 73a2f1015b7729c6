import { readIpcFileBytes, type ArrowTable } from '../src/storage/arrow';
import { parsePreparedName, preparedFile, type TableLayout } from '../src/storage/layout';
import { storageOf } from '../src/storage/open-storage';
import type { PrepareMergeInput, Progress } from './contract';
import type { CostMeter } from './unit-cost';
import { generationProblem } from './validate-generation';

// What a preparation's retry resumes from (any attempt, in fact, since the outputs are
// deterministic functions of immutable generations):
// - the whole unit, when the prepared batch for fromSeq..toSeq already exists and reads
//   back valid (a previous attempt finished encoding but its result was lost);
// - the read phase, from a checkpoint: every `prepareCheckpointSecs` of reading, the
//   newest rows of fromSeq..k are written as the prepared batch of range fromSeq..k
//   (same name scheme, same content a unit of that range would produce), and the read
//   heartbeats carry `checkpointThroughSeq: k`. A retry takes k from the previous
//   attempt's last heartbeat details and starts reading at k + 1. Heartbeats are
//   throttled and a dying worker may not deliver its last one, so when the details name
//   no usable checkpoint the newest valid one on disk is used instead.
// A retry may cover more than the attempt before it (prepare-merge.ts widenToSealed:
// what was sealed meanwhile joins); each batch file is still a function of its own range.
// Dedup state itself is in memory (the heartbeat payload is capped at a few KiB), so
// without any checkpoint the read starts over.

type Batch = { table: ArrowTable; bytes: number };

/** A prepared batch (or checkpoint) as read, not yet checked: null when it is missing or unreadable. */
export async function readBatch(file: string, cost: CostMeter): Promise<Batch | null> {
  try {
    const { table, bytes } = await readIpcFileBytes(file);
    cost.read(bytes.byteLength);
    return { table, bytes: bytes.byteLength };
  } catch {
    return null;
  }
}

/** The batch if it holds rows of a valid generation of the table's key. */
export const valid = (read: Batch | null, key: string): Batch | null =>
  read && read.table.numRows > 0 && !generationProblem(read.table, key, null, undefined) ? read : null;

const loadValid = async (file: string, key: string, cost: CostMeter) => valid(await readBatch(file, cost), key);

/** Checkpoints of this range, newest first: prepared batches fromSeq..k with k < toSeq. */
export async function checkpoints(l: TableLayout, shard: string, fromSeq: number, toSeq: number): Promise<number[]> {
  const names = await storageOf(l.prepared).list(l.prepared).catch(() => []);
  const ks: number[] = [];
  for (const { name } of names) {
    const p = parsePreparedName(name);
    if (p && p.shard === shard && p.fromSeq === fromSeq && p.toSeq < toSeq) ks.push(p.toSeq);
  }
  return ks.sort((a, b) => b - a);
}

export interface ResumePoint {
  k: number;
  table: ArrowTable;
  via: 'heartbeat' | 'scan';
}

/**
 * Where a retry starts: the checkpoint the last heartbeat named, else the newest valid
 * one of `listing` (checkpoints(), started by the caller beside its other reads).
 */
export async function resumePoint(l: TableLayout, key: string, input: PrepareMergeInput, previous: Partial<Progress> | undefined, cost: CostMeter, listing: Promise<number[]>): Promise<ResumePoint | null> {
  const { shard, fromSeq, toSeq } = input;
  const named = previous?.phase === 'read' ? previous.checkpointThroughSeq : undefined;
  if (typeof named === 'number' && Number.isSafeInteger(named) && named >= fromSeq && named < toSeq) {
    const cp = await loadValid(preparedFile(l, shard, fromSeq, named), key, cost);
    if (cp) return { k: named, table: cp.table, via: 'heartbeat' };
  }
  for (const k of await listing) {
    const cp = await loadValid(preparedFile(l, shard, fromSeq, k), key, cost);
    if (cp) return { k, table: cp.table, via: 'scan' };
  }
  return null;
}
