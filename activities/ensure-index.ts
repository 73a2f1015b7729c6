import { lanceTableDir, openLanceTable } from '../src/storage/lance-table';
import { readTableMeta } from '../src/storage/table-meta';
import type { IndexResult, IndexSpec, TableRef } from './contract';
import { indexDeadlineMs } from './deadlines';
import type { ActivityDeps } from './deps';
import { indexConfig, indexName, missingIndices, wantedIndices } from './index-specs';
import { addLanceBytes } from './lance-cost';
import { ProgressReporter } from './progress';
import { costMeter } from './unit-cost';

// Builds the indices the table should have and lacks (index-specs.ts), re-checked at
// commit time (another unit may have built one since the plan). createIndex runs
// alongside a merge without failing, but the index then misses the merge's fragments;
// holding the turn avoids it.
export function makeEnsureIndex(deps: ActivityDeps) {
  return async function ensureIndex(input: TableRef): Promise<IndexResult> {
    const progress = new ProgressReporter('ensureIndex', deps.faults);
    const cost = costMeter(deps);
    return cost.during(async () => {
      const meta = await readTableMeta(deps.dataRoot, input.table);
      const tbl = await openLanceTable(deps.dataRoot, input.table);
      if (!tbl) return { version: 0, rows: 0, built: [], cost: cost.result() };
      const rows = await tbl.countRows();
      const fromVersion = await tbl.version();
      const built: IndexSpec[] = [];
      await progress.point('commit');
      for (const spec of await missingIndices(tbl, wantedIndices(meta.indices, meta.key, rows))) {
        const deadlineMs = Date.now() + indexDeadlineMs(rows, spec.type);
        await progress.bounded(
          { phase: 'commit', step: `createIndex ${spec.column} ${spec.type}`, deadlineMs },
          tbl.createIndex(spec.column, { config: indexConfig(spec), name: indexName(spec), replace: false }),
        );
        built.push(spec);
      }
      const version = await tbl.version();
      // The index files written; the column a build scans is not counted (Lance reports no reads).
      const measured = await addLanceBytes(deps, cost, lanceTableDir(deps.dataRoot, input.table), fromVersion, version);
      return { version, rows, built, ...(measured ? { cost: cost.result() } : {}) };
    });
  };
}
