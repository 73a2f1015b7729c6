import fs from 'node:fs/promises';
import path from 'node:path';
import { combineOverrides, type PolicyOverride } from '../config/policy-schema';
import { SEQ_COLUMN, validateColumnName, validateShardName, validateTableName } from '../names';
import { tempPathFor, fsyncDir, writeFileAtomic } from './atomic-file';
import { withFileLock } from './file-lock';
import { shardDir, tableLayout } from './layout';

// table.json: what a table is (key, shards, configured indices, policy override).
// Created once (it is the marker that the table exists); only the policy changes later.

/** An index the index kind keeps built on the table (table.json `indices`). */
export interface IndexSpec {
  column: string;
  type: 'btree' | 'bitmap' | 'ivf_flat' | 'ivf_pq';
}

export interface TableMeta {
  name: string;
  key: string;
  shards: string[];
  indices: IndexSpec[];
  /**
   * The per-table policy override: given at creation, then every accepted
   * `turnstile policy --set` layered on top. The running workflow owns the live policy;
   * this is what a workflow started afresh (after a terminate) begins with.
   */
  policy?: PolicyOverride;
}

const INDEX_TYPES: readonly IndexSpec['type'][] = ['btree', 'bitmap', 'ivf_flat', 'ivf_pq'];

export class TableNotFoundError extends Error {
  constructor(
    readonly root: string,
    readonly table: string,
  ) {
    super(`table ${table} does not exist under ${root} (no ${tableLayout(root, table).tableFile}); create it with \`turnstile table create\``);
    this.name = 'TableNotFoundError';
  }
}

export class TableExistsError extends Error {
  constructor(
    readonly root: string,
    readonly table: string,
  ) {
    super(`table ${table} already exists under ${root}`);
    this.name = 'TableExistsError';
  }
}

function validateMeta(meta: TableMeta): TableMeta {
  validateTableName(meta.name);
  validateColumnName(meta.key);
  if (meta.key === SEQ_COLUMN) throw new Error(`key: ${SEQ_COLUMN} is reserved for the generation seq`);
  if (!Array.isArray(meta.shards) || meta.shards.length === 0) throw new Error('shards: at least one shard is needed');
  meta.shards.forEach(validateShardName);
  if (new Set(meta.shards).size !== meta.shards.length) throw new Error(`shards: duplicate names in ${meta.shards.join(', ')}`);
  for (const ix of meta.indices) {
    validateColumnName(ix.column);
    if (!INDEX_TYPES.includes(ix.type)) {
      throw new Error(`indices: type ${JSON.stringify(ix.type)} is not valid; accepted: ${INDEX_TYPES.join(', ')}`);
    }
  }
  return meta;
}

export async function createTableMeta(root: string, input: TableMeta): Promise<TableMeta> {
  const meta = validateMeta({ name: input.name, key: input.key, shards: [...input.shards], indices: [...input.indices], ...(input.policy ? { policy: input.policy } : {}) });
  const l = tableLayout(root, meta.name);
  await fs.mkdir(l.prepared, { recursive: true });
  for (const shard of meta.shards) await fs.mkdir(shardDir(l, shard), { recursive: true });
  // link() fails if table.json exists, so two concurrent creates cannot both win,
  // and readers never see a half-written table.json.
  const tmp = tempPathFor(l.tableFile);
  await fs.writeFile(tmp, `${JSON.stringify(meta, null, 2)}\n`, { flag: 'wx' });
  try {
    await fs.link(tmp, l.tableFile);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new TableExistsError(root, meta.name);
    throw err;
  } finally {
    await fs.rm(tmp, { force: true });
  }
  await fsyncDir(l.meta);
  return meta;
}

export async function readTableMeta(root: string, table: string): Promise<TableMeta> {
  validateTableName(table);
  const file = tableLayout(root, table).tableFile;
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new TableNotFoundError(root, table);
    throw err;
  }
  try {
    return validateMeta(JSON.parse(text) as TableMeta);
  } catch (err) {
    throw new Error(`${file}: invalid table metadata: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Names of the tables under root (those with a table.json), sorted. */
export async function listTables(root: string): Promise<string[]> {
  const dir = path.join(root, '_turnstile');
  const names = await fs.readdir(dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [] as string[];
    throw err;
  });
  const found: string[] = [];
  for (const name of names) {
    const exists = await fs.access(tableLayout(root, name).tableFile).then(
      () => true,
      () => false,
    );
    if (exists) found.push(name);
  }
  return found.sort();
}

/** Layers an accepted policy override onto table.json's, atomically; returns the combined override. */
export async function savePolicyOverride(root: string, table: string, override: PolicyOverride): Promise<PolicyOverride> {
  const l = tableLayout(root, table);
  return withFileLock(path.join(l.meta, 'table.lock'), async () => {
    const meta = await readTableMeta(root, table);
    const policy = combineOverrides(meta.policy, override);
    await writeFileAtomic(l.tableFile, `${JSON.stringify({ ...meta, policy }, null, 2)}\n`);
    return policy;
  });
}
