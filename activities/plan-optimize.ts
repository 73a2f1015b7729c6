import { openLanceTable } from '../src/storage/lance-table';
import { readTableMeta } from '../src/storage/table-meta';
import type { OptimizePlan, PlanOptimizeInput, PlanOptimizeResult } from './contract';
import type { ActivityDeps } from './deps';
import { withCost } from './unit-cost';

// Preparation of optimize is planning only: Lance's optimize has no separate compaction
// plan to hand over, so the commit redoes the work the plan predicts. Optimize is
// needed when any of its three jobs has something to do:
// - compaction: more than one small fragment (one small fragment has nothing to merge with);
// - index folding: any index has unindexed rows (merges leave updated rows unindexed);
// - pruning: versions older than retentionSecs exist (only when retentionSecs is given).

export async function sumUnindexedRows(tbl: NonNullable<Awaited<ReturnType<typeof openLanceTable>>>): Promise<number> {
  let total = 0;
  for (const ix of await tbl.listIndices()) {
    const st = await tbl.indexStats(ix.name);
    total += st?.numUnindexedRows ?? 0;
  }
  return total;
}

export function makePlanOptimize(deps: ActivityDeps) {
  // Metadata only (stats, index stats, versions): its cost is CPU (unit-cost.ts).
  return async (input: PlanOptimizeInput): Promise<PlanOptimizeResult> => withCost(deps, () => planOptimize(deps, input));
}

/** The plan itself: also run inside a merge's commit when optimize rides it (commit-merge.ts). */
export async function planOptimize(deps: ActivityDeps, input: PlanOptimizeInput): Promise<OptimizePlan> {
  await readTableMeta(deps.dataRoot, input.table);
  const tbl = await openLanceTable(deps.dataRoot, input.table);
  if (!tbl) return { needed: false, reason: 'nothing committed yet', numFragments: 0, numSmallFragments: 0, unindexedRows: 0, versionsPastRetention: 0 };
  const stats = await tbl.stats();
  const unindexedRows = await sumUnindexedRows(tbl);
  let versionsPastRetention = 0;
  if (input.retentionSecs !== undefined) {
    const cutoff = Date.now() - input.retentionSecs * 1000;
    const versions = await tbl.listVersions();
    const latest = await tbl.version();
    versionsPastRetention = versions.filter((v) => v.version !== latest && v.timestamp.getTime() < cutoff).length;
  }
  const { numFragments, numSmallFragments } = stats.fragmentStats;
  const reasons: string[] = [];
  if (numSmallFragments > 1) reasons.push(`${numSmallFragments} small fragments of ${numFragments}`);
  if (unindexedRows > 0) reasons.push(`${unindexedRows} unindexed rows`);
  if (versionsPastRetention > 0) reasons.push(`${versionsPastRetention} versions past retention`);
  return {
    needed: reasons.length > 0,
    reason: reasons.length > 0 ? reasons.join('; ') : 'compact, indexed and pruned',
    numFragments,
    numSmallFragments,
    unindexedRows,
    versionsPastRetention,
  };
}
