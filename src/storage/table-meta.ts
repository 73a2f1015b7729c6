import { combineOverrides, type PolicyOverride } from '../config/policy-schema';
import { INDEX_TYPES, type IndexSpec } from '../messages/index-spec';
import { SEQ_COLUMN, validateColumnName, validateShardName, validateTableName } from '../messages/names';
import { shardDir, tableLayout } from './layout';
import { joinLoc } from './location';
import { storageAt } from './open-storage';
import { tableFiles, type TableFiles } from './table-files';

// table.json: what a table is (key, shards, configured indices, policy override).
// Created once (it is the marker that the table exists); only the policy changes later.

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
  /**
   * An adopted table (`table adopt`): a Lance table written directly by others, at this
   * URI. It has no shards and no generations; key is '' when none was declared.
   */
  adopted?: { uri: string };
}

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
  if (meta.adopted) {
    if (typeof meta.adopted.uri !== 'string' || meta.adopted.uri === '') throw new Error('adopted.uri: the Lance table directory is needed');
    if (meta.shards.length > 0) throw new Error('shards: an adopted table has none (its writers write to it directly)');
    if (meta.key !== '') validateColumnName(meta.key);
    return meta;
  }
  validateColumnName(meta.key);
  if (meta.key === SEQ_COLUMN) throw new Error(`key: ${SEQ_COLUMN} is reserved for the generation seq`);
  if (!Array.isArray(meta.shards) || meta.shards.length === 0) throw new Error('shards: at least one shard is needed');
  meta.shards.forEach(validateShardName);
  if (new Set(meta.shards).size !== meta.shards.length) throw new Error(`shards: duplicate names in ${meta.shards.join(', ')}`);
  for (const ix of meta.indices) {
    validateColumnName(ix.column);
    if (!(INDEX_TYPES as readonly string[]).includes(ix.type)) {
      throw new Error(`indices: type ${JSON.stringify(ix.type)} is not valid; accepted: ${INDEX_TYPES.join(', ')}`);
    }
  }
  return meta;
}

export async function createTableMeta(root: string, input: TableMeta): Promise<TableMeta> {
  const meta = validateMeta({
    name: input.name,
    key: input.key,
    shards: [...input.shards],
    indices: [...input.indices],
    ...(input.policy ? { policy: input.policy } : {}),
    ...(input.adopted ? { adopted: { uri: input.adopted.uri } } : {}),
  });
  const l = tableLayout(root, meta.name);
  const store = storageAt(root);
  await store.ensureDir(l.prepared);
  for (const shard of meta.shards) await store.ensureDir(shardDir(l, shard));
  // Created only if absent, so two concurrent creates cannot both win, and readers
  // never see a half-written table.json.
  if (!(await store.putIfAbsent(l.tableFile, encodeMeta(meta)))) throw new TableExistsError(root, meta.name);
  return meta;
}

const encodeMeta = (meta: TableMeta): string => `${JSON.stringify(meta, null, 2)}\n`;

export async function readTableMeta(root: string, table: string): Promise<TableMeta> {
  return readTableMetaIn(tableFiles(root, table));
}

/** readTableMeta with the table's files already resolved (table-handle.ts). */
export async function readTableMetaIn(files: TableFiles): Promise<TableMeta> {
  return (await readVersionedMeta(files)).meta;
}

async function readVersionedMeta({ name, storage, layout }: TableFiles): Promise<{ meta: TableMeta; etag: string }> {
  validateTableName(name);
  const file = layout.tableFile;
  const got = await storage.readVersioned(file);
  if (!got) throw new TableNotFoundError(layout.root, name);
  try {
    return { meta: validateMeta(JSON.parse(got.bytes.toString('utf8')) as TableMeta), etag: got.etag };
  } catch (err) {
    throw new Error(`${file}: invalid table metadata: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Names of the tables under root (those with a table.json), sorted. */
export async function listTables(root: string): Promise<string[]> {
  return (await listTableFiles(root)).map((t) => t.name);
}

/** The tables under root with their table.json's size and mtime, sorted by name. */
export async function listTableFiles(root: string): Promise<{ name: string; size: number; mtimeMs: number }[]> {
  const store = storageAt(root);
  const found: { name: string; size: number; mtimeMs: number }[] = [];
  for (const { name, isDir } of await store.list(joinLoc(root, '_turnstile'))) {
    const st = isDir ? await store.stat(tableLayout(root, name).tableFile) : null;
    if (st) found.push({ name, ...st });
  }
  return found.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * Layers an accepted policy override onto table.json's, atomically; returns the combined
 * override. A compare-and-swap on table.json's etag: a concurrent save is never lost,
 * the loser reads the winner's table.json and layers its override on top.
 */
export async function savePolicyOverride(root: string, table: string, override: PolicyOverride): Promise<PolicyOverride> {
  const files = tableFiles(root, table);
  for (;;) {
    const { meta, etag } = await readVersionedMeta(files);
    const policy = combineOverrides(meta.policy, override);
    if (await files.storage.putIfMatch(files.layout.tableFile, encodeMeta({ ...meta, policy }), etag)) return policy;
  }
}
