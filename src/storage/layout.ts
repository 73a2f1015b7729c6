import path from 'node:path';

// Where everything of a table lives under the storage root (TURNSTILE_DATA).
// The Lance table itself is `<root>/<table>.lance`, so `lancedb.connect(root).openTable(table)`
// reads it from any LanceDB client; Turnstile's own files sit apart under `_turnstile/`.

export interface TableLayout {
  root: string;
  /** `<root>/_turnstile/<table>` */
  meta: string;
  /** table.json: { name, key, shards: string[], indices: IndexSpec[] } */
  tableFile: string;
  /** Sealed generations: `<gen>/<shard>/<seq:12>.arrow`, plus `<gen>/<shard>/SEALED.json`. */
  gen: string;
  /** Prepared merge batches: `<prepared>/<shard>-<from>-<to>.arrow`. */
  prepared: string;
}

export function tableLayout(root: string, table: string): TableLayout {
  const meta = path.join(root, '_turnstile', table);
  return {
    root,
    meta,
    tableFile: path.join(meta, 'table.json'),
    gen: path.join(meta, 'gen'),
    prepared: path.join(meta, 'prepared'),
  };
}

export const shardDir = (l: TableLayout, shard: string): string => path.join(l.gen, shard);
export const generationFile = (l: TableLayout, shard: string, seq: number): string =>
  path.join(shardDir(l, shard), `${String(seq).padStart(12, '0')}.arrow`);
export const sealedFile = (l: TableLayout, shard: string): string => path.join(shardDir(l, shard), 'SEALED.json');
export const preparedFile = (l: TableLayout, shard: string, fromSeq: number, toSeq: number): string =>
  path.join(l.prepared, `${shard}-${fromSeq}-${toSeq}.arrow`);
/** Temporary names carry this marker so gc can find leftovers of killed processes. */
export const TEMP_MARKER = '.tmp-';
