import { openLanceTable } from '../src/storage/lance-table';
import { readTableMeta } from '../src/storage/table-meta';
import type { PlanIndexResult, TableRef } from './contract';
import type { ActivityDeps } from './deps';
import { missingIndices } from './index-specs';
import { withCost } from './unit-cost';

// Before the first commit there is no Lance table to index: nothing is missing yet. The
// count of configured indices lets a table without any stop planning (policy/idle.ts).
export function makePlanIndex(deps: ActivityDeps) {
  return async function planIndex(input: TableRef): Promise<PlanIndexResult> {
    // Metadata only: its cost is CPU (unit-cost.ts).
    return withCost(deps, async () => {
      const meta = await readTableMeta(deps.dataRoot, input.table);
      const tbl = await openLanceTable(deps.dataRoot, input.table);
      return { missing: tbl ? await missingIndices(tbl, meta.indices) : [], configured: meta.indices.length };
    });
  };
}
