import { joinLoc } from './location';

// Where everything of a table lives under the storage root (TURNSTILE_DATA): a local
// directory or s3://BUCKET/PREFIX (locations: see location.ts).
// The Lance table itself is `<root>/<table>.lance`, so `lancedb.connect(root).openTable(table)`
// reads it from any LanceDB client; Turnstile's own files sit apart under `_turnstile/`.

export interface TableLayout {
  root: string;
  /** `<root>/_turnstile/<table>` */
  meta: string;
  /** table.json: { name, key, shards: string[], indices: IndexSpec[] } */
  tableFile: string;
  /** schema.arrow: the column schema fixed by the table's first seal (table-schema.ts). */
  schemaFile: string;
  /** Sealed generations: `<gen>/<shard>/<seq:12>.arrow`, plus `<gen>/<shard>/SEALED.json`. */
  gen: string;
  /** Prepared merge batches: `<prepared>/<shard>-<from>-<to>.arrow`. */
  prepared: string;
}

export function tableLayout(root: string, table: string): TableLayout {
  const meta = joinLoc(root, '_turnstile', table);
  return {
    root,
    meta,
    tableFile: joinLoc(meta, 'table.json'),
    schemaFile: joinLoc(meta, 'schema.arrow'),
    gen: joinLoc(meta, 'gen'),
    prepared: joinLoc(meta, 'prepared'),
  };
}

/** Temporary names carry this marker so gc can find leftovers of killed processes. */
export const TEMP_MARKER = '.tmp-';

// File names are built and parsed here only, so the two cannot drift apart.

const GENERATION_NAME = /^(\d{12})\.arrow$/;
// Greedy: shard names may hold "-" and digits, the last two numbers are the range.
const PREPARED_NAME = /^(.*)-(\d+)-(\d+)\.arrow$/;

export const generationName = (seq: number): string => `${String(seq).padStart(12, '0')}.arrow`;

/** The seq of a generation file's name (`000000000042.arrow`), or null for any other name. */
export function parseGenerationName(name: string): number | null {
  const m = GENERATION_NAME.exec(name);
  return m ? Number(m[1]) : null;
}

export const preparedName = (shard: string, fromSeq: number, toSeq: number): string => `${shard}-${fromSeq}-${toSeq}.arrow`;

/** The unit range of a prepared batch's name (`s0-4-9.arrow`), or null for any other name, temporaries included. */
export function parsePreparedName(name: string): { shard: string; fromSeq: number; toSeq: number } | null {
  const m = PREPARED_NAME.exec(name);
  if (!m || name.includes(TEMP_MARKER)) return null;
  return { shard: m[1]!, fromSeq: Number(m[2]), toSeq: Number(m[3]) };
}

export const shardDir = (l: TableLayout, shard: string): string => joinLoc(l.gen, shard);
export const generationFile = (l: TableLayout, shard: string, seq: number): string => joinLoc(shardDir(l, shard), generationName(seq));
export const sealedFile = (l: TableLayout, shard: string): string => joinLoc(shardDir(l, shard), 'SEALED.json');
export const preparedFile = (l: TableLayout, shard: string, fromSeq: number, toSeq: number): string =>
  joinLoc(l.prepared, preparedName(shard, fromSeq, toSeq));
