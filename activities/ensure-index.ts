import { openLanceTable } from '../src/storage/lance-table';
import { readTableMeta } from '../src/storage/table-meta';
import type { IndexResult, IndexSpec, TableRef } from './contract';
import { indexDeadlineMs } from './deadlines';
import type { ActivityDeps } from './deps';
import { indexConfig, indexName, missingIndices } from './index-specs';
import { ProgressReporter } from './progress';

// Builds the configured indices the table lacks, re-checked at commit time (another
// unit may have built one since the plan). createIndex runs alongside a merge without
// failing, but the index then misses the merge's fragments; holding the turn avoids it.
export function makeEnsureIndex(deps: ActivityDeps) {
  return async function ensureIndex(input: TableRef): Promise<IndexResult> {
    const progress = new ProgressReporter('ensureIndex', deps.faults);
    const meta = await readTableMeta(deps.dataRoot, input.table);
    const tbl = await openLanceTable(deps.dataRoot, input.table);
    if (!tbl) return { version: 0, rows: 0, built: [] };
    const rows = await tbl.countRows();
    const built: IndexSpec[] = [];
    await progress.point('commit');
    for (const spec of await missingIndices(tbl, meta.indices)) {
      const deadlineMs = Date.now() + indexDeadlineMs(rows, spec.type);
      await progress.bounded(
        { phase: 'commit', step: `createIndex ${spec.column} ${spec.type}`, deadlineMs },
        tbl.createIndex(spec.column, { config: indexConfig(spec), name: indexName(spec), replace: false }),
      );
      built.push(spec);
    }
    return { version: await tbl.version(), rows, built };
  };
}
