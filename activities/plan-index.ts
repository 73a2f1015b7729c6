import { openLanceTable } from '../src/storage/lance-table';
import { readTableMeta } from '../src/storage/table-meta';
import type { IndexPlan, TableRef } from './contract';
import type { ActivityDeps } from './deps';
import { missingIndices } from './index-specs';

// Before the first commit there is no Lance table to index: nothing is missing yet. The
// count of configured indices lets a table without any stop planning (policy/idle.ts).
export function makePlanIndex(deps: ActivityDeps) {
  return async function planIndex(input: TableRef): Promise<IndexPlan> {
    const meta = await readTableMeta(deps.dataRoot, input.table);
    const tbl = await openLanceTable(deps.dataRoot, input.table);
    return { missing: tbl ? await missingIndices(tbl, meta.indices) : [], configured: meta.indices.length };
  };
}
