import { Context } from '@temporalio/activity';
import { formatBytes } from '../src/config/bytes';
import { generationFile, tableLayout } from '../src/storage/layout';
import { storageAt } from '../src/storage/open-storage';
import { ReadAhead } from '../src/util/read-ahead';
import type { PrepareMergeInput } from './contract';
import type { ActivityDeps } from './deps';
import { fail } from './failures';
import { commitReservation, maxBatchBytes, SMALL_BYTES } from '../src/worker/reservation-sizes';

// How a worker's activities hold reservations of its memory budget (invariant 6),
// and how big a merge batch may be. The sizes are src/worker/reservation-sizes.ts (pure, shared
// with the workflow).

export * from '../src/worker/reservation-sizes';

/** Who holds a reservation: the current activity attempt (and which of its holds, when it has two). */
function holder(part?: string): { id: string; what: { activity: string; unit: string } } {
  const info = Context.current().info;
  const wf = info.workflowExecution?.workflowId ?? '';
  return {
    id: `${wf}/${info.activityId}#${info.attempt}${part ? `/${part}` : ''}`,
    what: { activity: part ? `${info.activityType} (${part})` : info.activityType, unit: `${wf.replace(/^table\//, '')}: ${info.activityId}` },
  };
}

/**
 * Runs `fn` holding `bytes` of the worker's budget; without admission (tests) just runs
 * it. The reservation ends with the activity, whatever its outcome. `own`: a hold of
 * this activity (holdingWhileWaiting) that becomes this reservation.
 */
export async function withReservation<R>(deps: ActivityDeps, bytes: number, fn: () => Promise<R>, own?: string): Promise<R> {
  if (!deps.admission) return fn();
  const { id, what } = holder();
  await deps.admission.reserve(id, bytes, what, own);
  try {
    return await fn();
  } finally {
    deps.admission.release(id);
  }
}

/**
 * Runs `fn`, which waits for something before its real work, holding SMALL_BYTES
 * meanwhile. The hold takes over the poll claim that brought the task: a claim is the
 * size of the largest unit, so while a waiting activity kept it the worker polled for
 * nothing else, not even the commit holding its table's turn. `fn` gets the hold's id
 * to hand to withReservation, whose reservation then takes the hold over (taking
 * another claim instead would rob a poller of its bytes); the hold ends with `fn`.
 */
export async function holdingWhileWaiting<R>(deps: ActivityDeps, fn: (hold: string | undefined) => Promise<R>): Promise<R> {
  const admission = deps.admission;
  if (!admission) return fn(undefined);
  const { id, what } = holder('waiting');
  await admission.reserve(id, SMALL_BYTES, what);
  try {
    return await fn(id);
  } finally {
    // Already gone when a reservation took it over.
    admission.release(id);
  }
}

/** Generation sizes asked for ahead of the one summed (boundMergeRange). */
const STAT_AHEAD = 16;

/**
 * Splitting: the longest prefix fromSeq..k of the unit's range whose
 * generation files hold at most maxBatchBytes (at least one file), and their bytes. The
 * rest stays backlog for the next unit. A single generation whose merge needs more than
 * every live worker's whole budget can never merge: that fails for good, naming the
 * file, and the core holds the shard with that reason.
 */
export async function boundMergeRange(deps: ActivityDeps, input: PrepareMergeInput): Promise<{ toSeq: number; bytes: number; maxBatchBytes?: number }> {
  if (!deps.admission) return { toSeq: input.toSeq, bytes: 0 };
  const { smallest, largest } = deps.admission.fleetBudgets();
  const limit = maxBatchBytes(smallest);
  const l = tableLayout(deps.dataRoot, input.table);
  const store = storageAt(deps.dataRoot);
  let bytes = 0;
  let toSeq = input.fromSeq;
  // Sizes asked for STAT_AHEAD at a time: on an object store each is a round trip.
  const sizes = new ReadAhead(input.fromSeq, input.toSeq, STAT_AHEAD, async (seq) => (await store.stat(generationFile(l, input.shard, seq)))?.size ?? 0);
  try {
    for (let seq = input.fromSeq; seq <= input.toSeq; seq++) {
      // A missing file is the preparation's to report (or skip, below the gc floor).
      const size = await sizes.take(seq);
      if (seq > input.fromSeq && bytes + size > limit) break;
      if (seq === input.fromSeq && commitReservation(size) > largest) {
        throw fail(
          'TooBig',
          `generation ${generationFile(l, input.shard, seq)} is ${formatBytes(size)}; merging it needs ${formatBytes(commitReservation(size))}, more than any worker's memory budget (largest ${formatBytes(largest)}, worker.memoryBudgetBytes)`,
        );
      }
      bytes += size;
      toSeq = seq;
    }
  } finally {
    await sizes.settle();
  }
  return { toSeq, bytes, maxBatchBytes: limit };
}
