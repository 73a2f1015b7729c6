import { lanceVersionBytes, totalBytes, type LanceOp } from '../src/storage/lance-commit-bytes';
import type { ActivityDeps } from './deps';
import type { CostMeter } from './unit-cost';

// Adds what a Lance call wrote (and, for compaction and index merges, read) to an
// activity's cost, from the versions it made (src/storage/lance-commit-bytes.ts).

export interface LanceCostOptions {
  /** Only versions made by these operations count: an adopted table's outside writers commit meanwhile. */
  ops?: ReadonlySet<LanceOp>;
  /** Count index segments the call replaced as read: optimize merges new rows into an index; a rebuild reads none. */
  replacedIndicesRead?: boolean;
}

/**
 * Adds the bytes of versions after `before` through `after` of the table at `dir`; false
 * (logged, nothing added) when they could not be read. The commit itself has succeeded
 * by then, so a failure here must not fail the activity; it leaves the result without a
 * cost rather than with a wrong one.
 */
export async function addLanceBytes(deps: ActivityDeps, cost: CostMeter, dir: string, before: number, after: number, opts: LanceCostOptions = {}): Promise<boolean> {
  if (after <= before) return true;
  try {
    const t = totalBytes(await lanceVersionBytes(dir, before, after), opts.ops);
    cost.wrote(t.dataWritten + t.deletionsWritten + t.indexWritten + t.metadataWritten);
    cost.read(t.rewrittenRead + (opts.replacedIndicesRead ? t.indexReplaced : 0));
    return true;
  } catch (err) {
    deps.log?.(`cost of ${dir} versions ${before + 1}..${after} not measured: ${err instanceof Error ? err.message : String(err)}`);
    return false;
  }
}
