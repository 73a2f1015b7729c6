import { openLanceTable } from '../src/storage/lance-table';
import { readTableMeta } from '../src/storage/table-meta';
import type { PlanIndexResult, TableRef } from './contract';
import type { ActivityDeps } from './deps';
import { missingIndices, wantedIndices } from './index-specs';
import { withCost } from './unit-cost';

// Before the first commit there is no Lance table to index: nothing is missing yet. The
// count of wanted indices lets a table without any stop planning (policy/idle.ts) until a
// merge's commit finds it has grown to want a BTREE on its key (index-specs.ts).
export function makePlanIndex(deps: ActivityDeps) {
  return async function planIndex(input: TableRef): Promise<PlanIndexResult> {
    // Metadata only: its cost is CPU (unit-cost.ts).
    return withCost(deps, async () => {
      const meta = await readTableMeta(deps.dataRoot, input.table);
      const tbl = await openLanceTable(deps.dataRoot, input.table);
      if (!tbl) return { missing: [], configured: meta.indices.length };
      const wanted = wantedIndices(meta.indices, meta.key, await tbl.countRows());
      return { missing: await missingIndices(tbl, wanted), configured: wanted.length };
    });
  };
}
