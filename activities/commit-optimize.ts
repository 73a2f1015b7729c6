import { lanceTableDir, openLanceTable } from '../src/storage/lance-table';
import { readTableMeta } from '../src/storage/table-meta';
import type { CommitOptimizeInput, OptimizeResult } from './contract';
import { optimizeDeadlineMs } from './deadlines';
import type { ActivityDeps } from './deps';
import { fail } from './failures';
import { addLanceBytes } from './lance-cost';
import { ProgressReporter } from './progress';
import { costMeter, type CostMeter } from './unit-cost';

// Optimize holds the turn: it conflicts with merges (it is often preempted and fails
// after doing all its work) and with other optimizes. Never deleteUnverified: deleting
// unverified files can delete a concurrent writer's finished, uncommitted data file.
// Lance's optimize is not atomic (compaction may commit and pruning fail); a retry
// simply finds less to do.

export function makeCommitOptimize(deps: ActivityDeps) {
  return async function commitOptimize(input: CommitOptimizeInput): Promise<OptimizeResult> {
    const progress = new ProgressReporter('commitOptimize', deps.faults);
    if (!Number.isFinite(input.retentionSecs) || input.retentionSecs < 0) {
      throw fail('InvalidInput', `retentionSecs ${input.retentionSecs} must be a number >= 0`);
    }
    const cost = costMeter(deps);
    return cost.during(async () => {
      const { measured, ...r } = await optimizeTable(deps, input, progress, cost);
      return { ...r, ...(measured ? { cost: cost.result() } : {}) };
    });
  };
}

/** The optimize itself; also run inside a merge's commit when optimize rides it (commit-merge.ts). `measured`: as addLanceBytes says. */
export async function optimizeTable(deps: ActivityDeps, input: CommitOptimizeInput, progress: ProgressReporter, cost: CostMeter): Promise<Omit<OptimizeResult, 'cost'> & { measured: boolean }> {
  await readTableMeta(deps.dataRoot, input.table);
  const tbl = await openLanceTable(deps.dataRoot, input.table);
  if (!tbl) return { version: 0, rows: 0, fragmentsRemoved: 0, fragmentsAdded: 0, versionsPruned: 0, measured: true };
  const before = await tbl.stats();
  const fromVersion = await tbl.version();
  await progress.point('commit', 'optimize');
  const deadlineMs = Date.now() + optimizeDeadlineMs(before.numRows);
  const cleanupOlderThan = new Date(Date.now() - input.retentionSecs * 1000);
  const r = await progress.bounded({ phase: 'commit', step: 'optimize', deadlineMs }, tbl.optimize({ cleanupOlderThan }));
  const version = await tbl.version();
  // Compaction reads the fragments it rewrites whole; folding rows into an index reads the segment it merges.
  const measured = await addLanceBytes(deps, cost, lanceTableDir(deps.dataRoot, input.table), fromVersion, version, { replacedIndicesRead: true });
  return {
    version,
    rows: before.numRows,
    fragmentsRemoved: r.compaction.fragmentsRemoved,
    fragmentsAdded: r.compaction.fragmentsAdded,
    versionsPruned: r.prune.oldVersionsRemoved,
    measured,
  };
}
