import { CorruptArrowFileError, readIpcFile, type ArrowTable } from '../src/storage/arrow';
import { conditionalUpsert, openLanceTable, openOrCreateLanceTable } from '../src/storage/lance-table';
import { readTableMeta } from '../src/storage/table-meta';
import type { CommitMergeInput, CommitResult } from './contract';
import { mergeDeadlineMs } from './deadlines';
import type { ActivityDeps } from './deps';
import { fail, isNotFound, mapCommonError } from './failures';
import { ProgressReporter } from './progress';

// The commit of a merge, run while holding the table's turn. Idempotent by
// construction: the upsert replaces a row only with one of higher `_seq`, so a retry
// after a commit whose result was lost, or a late attempt of a presumed-dead worker,
// changes no rows. `rows` in the result counts rows inserted or updated by THIS call.

async function readPrepared(file: string): Promise<ArrowTable> {
  try {
    return await readIpcFile(file);
  } catch (err) {
    if (isNotFound(err)) throw fail('PreparedMissing', `prepared batch ${file} is missing; prepare the unit again`);
    if (err instanceof CorruptArrowFileError) throw fail('CorruptPrepared', `corrupt prepared batch ${err.message}; prepare the unit again`);
    throw err;
  }
}

export function makeCommitMerge(deps: ActivityDeps) {
  return async function commitMerge(input: CommitMergeInput): Promise<CommitResult> {
    const progress = new ProgressReporter('commitMerge', deps.faults);
    try {
      return await commit(deps, input, progress);
    } catch (err) {
      throw mapCommonError(err);
    }
  };
}

async function commit(deps: ActivityDeps, input: CommitMergeInput, progress: ProgressReporter): Promise<CommitResult> {
  const meta = await readTableMeta(deps.dataRoot, input.table);
  if (input.key !== meta.key) throw fail('InvalidInput', `key ${input.key} is not table ${input.table}'s key ${meta.key}`);
  const { prepared } = input;
  if (!prepared.preparedPath || prepared.rows === 0) {
    // An empty merge would still create a version: skip it.
    const tbl = await openLanceTable(deps.dataRoot, input.table);
    return { version: tbl ? await tbl.version() : 0, rows: 0 };
  }
  progress.report({ phase: 'commit', step: 'read-prepared' });
  const batch = deps.preparedCache?.take(prepared.preparedPath) ?? (await readPrepared(prepared.preparedPath));
  progress.report({ phase: 'commit', step: 'open' });
  const tbl = await openOrCreateLanceTable(deps.dataRoot, input.table, meta.key, batch.schema);
  await progress.point('commit');

  const budget = mergeDeadlineMs(batch.numRows);
  const deadlineMs = Date.now() + budget;
  const t0 = performance.now();
  const r = await progress.bounded(
    { phase: 'commit', step: 'mergeInsert', deadlineMs },
    conditionalUpsert(tbl, meta.key, batch, { timeoutMs: budget }),
  );
  deps.faults?.afterMergeInsert?.({ attempt: progress.attempt, version: r.version });
  deps.log?.(
    `commitMerge ${input.table}/${prepared.shard} ${prepared.fromSeq}..${prepared.toSeq}: version ${r.version}, ${r.inserted} inserted, ${r.updated} updated`,
  );
  return { version: r.version, rows: r.inserted + r.updated, lanceMs: Math.round(performance.now() - t0) };
}
