// How a merge's upsert finds the table's rows for its keys. Lance joins either by
// scanning the key column of the whole table or through a BTREE on the key (rows the
// index does not cover yet are scanned either way). A scan costs the table's size, a
// lookup the batch's: measured on lancedb 0.31 (bench/merge-join.ts, bench/README.md),
// 100 rows into 2M took 15 ms of CPU through the index and 238 ms by scan, while 100k
// rows into 1M took 181 ms through the index and 133 ms by scan. The index wins below
// about one batch row per 50 table rows.

/**
 * A table of at least this many rows gets a BTREE on its key when it has none, as if
 * table.json configured it: by then a scan costs a 100-row merge twice the CPU of a
 * lookup (bench/README.md), and building the index is cheap (1M int64 keys: 190 ms of
 * CPU, no RSS above what opening the table took).
 */
export const KEY_INDEX_AT_ROWS = 250_000;

/** A batch at most this fraction of the table's rows joins through the key's index. */
export const INDEX_JOIN_MAX_FRACTION = 1 / 50;

/** Index types whose lookups Lance's merge can join through. */
const JOINABLE_INDEX_TYPES = new Set(['btree']);

export type MergeJoin = 'index' | 'scan';

export interface IndexOnColumns {
  indexType: string;
  columns: readonly string[];
}

/** Whether one of `indices` is a BTREE on exactly the key column. */
export const keyIndexed = (indices: readonly IndexOnColumns[], key: string): boolean =>
  indices.some((i) => i.columns.length === 1 && i.columns[0] === key && JOINABLE_INDEX_TYPES.has(i.indexType.toLowerCase()));

/** Whether a table of `tableRows` rows without a BTREE on its key should get one. */
export const wantsKeyIndex = (tableRows: number): boolean => tableRows >= KEY_INDEX_AT_ROWS;

/** The join for a batch of `batchRows` into a table of `tableRows` (whose key has an index or not). */
export function mergeJoin(batchRows: number, tableRows: number, indexed: boolean): MergeJoin {
  return indexed && batchRows <= tableRows * INDEX_JOIN_MAX_FRACTION ? 'index' : 'scan';
}
