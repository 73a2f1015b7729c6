import * as lancedb from '@lancedb/lancedb';
import { SEQ_COLUMN } from '../messages/names';
import { arrow, type ArrowTable, type Schema } from './arrow';
import { acceptEncodedIpc, EncodedIpc, encodeForLance } from './lance-ipc-input';
import { isS3, joinLoc } from './location';
import { withScratch } from './scratch';
import { lanceStorageOptions } from './s3-env';
import { keyIndexed, mergeJoin, type MergeJoin } from './merge-join';

// The base Lance table, `<root>/<name>.lance`, so any LanceDB client reads it with
// `lancedb.connect(root).openTable(name)` (on S3: `lancedb.connect('s3://BUCKET/PREFIX',
// { storageOptions })` with the endpoint and credentials of s3-env.ts). A merge through a stale handle can duplicate
// rows, so every activity opens its own handle (cheap: one listing of the versions and
// one manifest read); only connections are shared.

export type LanceTable = lancedb.Table;

const PK_META = 'lance-schema:unenforced-primary-key';

const connections = new Map<string, Promise<lancedb.Connection>>();

export const lanceTableDir = (root: string, name: string): string => joinLoc(root, `${name}.lance`);

/** What any LanceDB client passes to open a root: nothing for a directory, storageOptions for S3. */
export const lanceConnectOptions = (root: string): Partial<lancedb.ConnectionOptions> | undefined =>
  isS3(root) ? { storageOptions: lanceStorageOptions() } : undefined;

export function connect(root: string): Promise<lancedb.Connection> {
  let c = connections.get(root);
  if (!c) {
    c = lancedb.connect(root, lanceConnectOptions(root));
    connections.set(root, c);
    c.catch(() => connections.delete(root));
  }
  return c;
}

/**
 * The table at its latest version, or null when nothing was committed yet. Opening finds
 * the latest version (a handle opened before another process commits does not see the
 * commit; one opened after does), so no separate check or refresh: on S3 each of those
 * was one more LIST of the table's versions on every commit.
 */
export async function openLanceTable(root: string, name: string): Promise<LanceTable | null> {
  try {
    return await (await connect(root)).openTable(name);
  } catch (err) {
    if (/was not found/i.test(String(err))) return null;
    throw err;
  }
}

/**
 * Lance refuses a nullable primary key column and schema metadata is not ours to carry.
 * The key is marked as the unenforced primary key in the schema itself, so the table is
 * created with it in one commit (setting it afterwards is a second version).
 */
export function tableSchemaFor(schema: Schema, key: string): Schema {
  return new arrow.Schema(
    schema.fields.map((f) => (f.name === key ? new arrow.Field(f.name, f.type, false, new Map([[PK_META, 'true']])) : new arrow.Field(f.name, f.type, f.nullable))),
  );
}

/** Open the table, creating it empty from `schema` on first commit; the primary key is always set. */
export async function openOrCreateLanceTable(root: string, name: string, key: string, schema: Schema): Promise<LanceTable> {
  let tbl = await openLanceTable(root, name);
  if (!tbl) {
    const db = await connect(root);
    try {
      await db.createEmptyTable(name, tableSchemaFor(schema, key), { mode: 'create' });
    } catch (err) {
      // Another process created it between our check and create: use theirs.
      if (!/already exists/i.test(String(err))) throw err;
    }
    tbl = await openLanceTable(root, name);
    if (!tbl) throw new Error(`lance table ${lanceTableDir(root, name)} vanished right after creation`);
  }
  await ensurePrimaryKey(tbl, key);
  return tbl;
}

/**
 * Without an unenforced primary key, two merges inserting the same new key both
 * insert it. The key cannot be changed once set, so a different one is an error.
 */
export async function ensurePrimaryKey(tbl: LanceTable, key: string): Promise<void> {
  const schema = await tbl.schema();
  const pk = schema.fields.filter((f) => [...f.metadata.keys()].some((k) => k.startsWith(PK_META)));
  if (pk.length > 0) {
    const names = pk.map((f) => f.name);
    if (names.length !== 1 || names[0] !== key) {
      throw new Error(`table ${tbl.name} has primary key ${names.join(', ')}, expected ${key}`);
    }
    return;
  }
  try {
    await tbl.setUnenforcedPrimaryKey(key);
  } catch (err) {
    if (!/already set/i.test(String(err))) throw err;
  }
}

export interface UpsertResult {
  version: number;
  inserted: number;
  updated: number;
  /** True when the batch was empty and nothing was committed. */
  skipped: boolean;
  /** Encoding the batch as IPC for lancedb (ms), part of the call's time. */
  encodeMs?: number;
  /** How Lance found the table's rows for the batch's keys (merge-join.ts). */
  join?: MergeJoin;
  /** Whether the table has a BTREE on its key, and its rows before the upsert. */
  keyIndexed?: boolean;
  tableRows?: number;
}

/** The join for `batchRows` into the table: through the key's BTREE when it has one and the batch is small beside the table. */
async function chooseMergeJoin(tbl: LanceTable, key: string, batchRows: number): Promise<{ join: MergeJoin; keyIndexed: boolean; tableRows: number }> {
  const indexed = keyIndexed(await tbl.listIndices(), key);
  const tableRows = await tbl.countRows();
  return { join: mergeJoin(batchRows, tableRows, indexed), keyIndexed: indexed, tableRows };
}

/**
 * Last-writer-wins by `_seq`: a row replaces the table's row only if its seq is higher,
 * so re-applying a batch or applying an older one changes nothing. Empty batches are
 * skipped because a no-op merge still creates a version.
 */
export async function conditionalUpsert(tbl: LanceTable, key: string, batch: ArrowTable, opts: { timeoutMs?: number; ipc?: Buffer } = {}): Promise<UpsertResult> {
  if (batch.numRows === 0) return { version: await tbl.version(), inserted: 0, updated: 0, skipped: true };
  acceptEncodedIpc();
  const { join, keyIndexed: indexed, tableRows } = await chooseMergeJoin(tbl, key, batch.numRows);
  // The scratch stays lent until lancedb's promise settles (it copies the bytes first thing).
  let encodeMs = 0;
  const r = await withScratch(async (alloc) => {
    const t0 = performance.now();
    // `opts.ipc`: the batch already encoded as one IPC file (a prepared batch as written).
    const data = opts.ipc ? new EncodedIpc(opts.ipc, batch.numRows) : await encodeForLance(batch, alloc);
    encodeMs = performance.now() - t0;
    return tbl
      .mergeInsert(key)
      .whenMatchedUpdateAll({ where: `target.${SEQ_COLUMN} < source.${SEQ_COLUMN}` })
      .whenNotMatchedInsertAll()
      .useIndex(join === 'index')
      .execute(data as unknown as ArrowTable, opts.timeoutMs ? { timeoutMs: Math.max(1, Math.round(opts.timeoutMs)) } : undefined);
  });
  return { version: r.version, inserted: r.numInsertedRows, updated: r.numUpdatedRows, skipped: false, encodeMs, join, keyIndexed: indexed, tableRows };
}
