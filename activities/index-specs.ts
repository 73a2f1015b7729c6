import { Index } from '@lancedb/lancedb';
import type { LanceTable } from '../src/storage/lance-table';
import { wantsKeyIndex } from '../src/storage/merge-join';
import type { IndexSpec } from './contract';

// The indices a table should have versus what the Lance table has. Lance reports types
// as "BTree", "Bitmap", "IvfFlat", "IVF_PQ" ...: compare letters only, case-folded.

const norm = (t: string): string => t.toLowerCase().replace(/[^a-z0-9]/g, '');

/**
 * The indices the index kind keeps built: table.json's, and a BTREE on the key once the
 * table has grown to want one for its merges (src/storage/merge-join.ts).
 */
export function wantedIndices(configured: readonly IndexSpec[], key: string, tableRows: number): IndexSpec[] {
  const keyBtree: IndexSpec = { column: key, type: 'btree' };
  const has = configured.some((s) => s.column === key && s.type === 'btree');
  return has || !wantsKeyIndex(tableRows) ? [...configured] : [...configured, keyBtree];
}

export async function missingIndices(tbl: LanceTable, wanted: readonly IndexSpec[]): Promise<IndexSpec[]> {
  const have = await tbl.listIndices();
  return wanted.filter((w) => !have.some((h) => h.columns.length === 1 && h.columns[0] === w.column && norm(h.indexType) === norm(w.type)));
}

export function indexConfig(spec: IndexSpec): Index {
  switch (spec.type) {
    case 'btree':
      return Index.btree();
    case 'bitmap':
      return Index.bitmap();
    case 'ivf_flat':
      return Index.ivfFlat();
    case 'ivf_pq':
      return Index.ivfPq();
  }
}

/** Named by column and type, so a second index type on one column gets its own name. */
export const indexName = (spec: IndexSpec): string => `${spec.column}_${spec.type}_idx`;
