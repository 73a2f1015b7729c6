import { createTableMeta, listTables, readTableMeta } from '../storage/generation-store';
import { INDEX_TYPES, type IndexSpec } from '../messages/index-spec';
import { applyOverride, defaultPolicy, type PolicyOverride } from '../config/policy-schema';
import { shardNames, validateColumnName, validateTableName } from '../messages/names';
import { workflowArgsFor } from '../client/table-writer';
import { refuseOtherStorageRoot } from '../client/storage-root-check';
import { int, positional, required, str, type Parsed } from './args';
import { UsageError } from '../messages/errors';
import { readCheckedConfig, readJsonFile } from './context';
import { withTables } from './operator-commands';
import { WorkflowNotFoundError } from '@temporalio/client';
import { resetToRunStart, ResetRefused } from '../client/reset-run';

// `table create` writes the table's metadata and starts its workflow; `table list`
// lists tables from the storage root next to their workflows' visibility state; `table
// reset` restarts a stuck run from its first workflow task.

const asUsage = <T>(fn: () => T): T => {
  try {
    return fn();
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
};

/** `--indices id:btree,value:bitmap`: the indices the index kind keeps built. */
function parseIndices(text: string | undefined): IndexSpec[] {
  if (!text) return [];
  return text.split(',').map((part) => {
    const [column, type] = part.split(':');
    if (!column || !type || !(INDEX_TYPES as readonly string[]).includes(type)) {
      throw new UsageError(`--indices: ${JSON.stringify(part)} is not COLUMN:TYPE with TYPE one of ${INDEX_TYPES.join(', ')}`);
    }
    return { column: asUsage(() => validateColumnName(column)), type: type as IndexSpec['type'] };
  });
}

export async function create(p: Parsed): Promise<void> {
  const name = asUsage(() => validateTableName(positional(p, 0, 'NAME')));
  const key = asUsage(() => validateColumnName(required(p, 'key', 'the primary-key column')));
  const shards = shardNames(int(p, 'shards', 1, 256, 1));
  const indices = parseIndices(str(p, 'indices'));
  const policyFile = str(p, 'policy');
  const policy = policyFile ? (readJsonFile(policyFile, '--policy') as PolicyOverride) : undefined;
  if (policy) {
    const r = applyOverride(defaultPolicy(), policy);
    if (!r.ok) throw new UsageError(`--policy: ${r.error}`);
  }
  const config = await readCheckedConfig();
  await withTables(async (t) => {
    // Before table.json exists: a table under a root no worker reads would never run.
    await refuseOtherStorageRoot(t, config.dataRoot);
    const meta = await createTableMeta(config.dataRoot, { name, key, shards, indices, policy }).catch((e: Error) => {
      throw new UsageError(e.message);
    });
    await t.start(workflowArgsFor(meta));
  });
  console.log(`created table ${name} (key ${key}, shards ${shards.join(',')}) under ${config.dataRoot}; workflow table/${name}`);
}

export async function list(p: Parsed): Promise<void> {
  const config = await readCheckedConfig();
  const names = await listTables(config.dataRoot);
  const running = new Map((await withTables((t) => t.list())).map((r) => [r.table, r]));
  const rows = await Promise.all(
    [...new Set([...names, ...running.keys()])].sort().map(async (table) => {
      const meta = names.includes(table) ? await readTableMeta(config.dataRoot, table) : null;
      return { table, key: meta?.key ?? null, shards: meta?.shards ?? [], workflow: running.has(table) ? 'running' : 'not running' };
    }),
  );
  if (p.flags.json) console.log(JSON.stringify(rows, null, 2));
  else for (const r of rows) console.log(`${r.table}  key ${r.key ?? '?'}  shards ${r.shards.length}  workflow ${r.workflow}`);
}

export async function reset(p: Parsed): Promise<void> {
  const name = asUsage(() => validateTableName(positional(p, 0, 'NAME')));
  const reason = required(p, 'reason', 'why, recorded in the run history');
  const r = await withTables((t) =>
    resetToRunStart(t.client, name, reason).catch((e: unknown) => {
      if (e instanceof WorkflowNotFoundError) throw new UsageError(`table ${name}: no workflow (table create or table adopt starts one)`);
      if (e instanceof ResetRefused) throw new UsageError(e.message);
      throw e;
    }),
  );
  console.log(`reset table ${name}: run ${r.oldRunId} -> ${r.newRunId}, from its first workflow task (event ${r.resetEventId}); signals since then are heard again`);
}
