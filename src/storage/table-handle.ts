import { tableFiles, type TableFiles } from './table-files';
import { readTableMetaIn, type TableMeta } from './table-meta';

// A table opened once for the path that seals into it: its files (backend, layout) and
// its table.json. A handle stays valid while the table exists: name, key and shards
// never change (only the policy in `meta` may go stale, and sealing does not use it).
// The schema is not held here: the table's first seal fixes it, maybe after the handle
// was opened and in another process; table-schema.ts caches it per process once fixed.

export interface TableHandle extends TableFiles {
  meta: TableMeta;
}

/** Reads table.json unless the caller already has this table's `meta`. */
export async function openTable(root: string, name: string, meta?: TableMeta): Promise<TableHandle> {
  const files = tableFiles(root, name);
  return { ...files, meta: meta?.name === name ? meta : await readTableMetaIn(files) };
}
