import * as lancedb from '@lancedb/lancedb';
import { lanceConnectOptions } from '../../src/storage/lance-table';

/** Every row of a Lance table, read the way any LanceDB client would, keyed by `key`. */
export async function readTableRows(root: string, table: string, key = 'id'): Promise<{ count: number; rows: Map<string, Record<string, unknown>> }> {
  const db = await lancedb.connect(root, lanceConnectOptions(root));
  const tbl = await db.openTable(table);
  const count = await tbl.countRows();
  const data = await tbl.query().toArray();
  const rows = new Map<string, Record<string, unknown>>();
  for (const r of data as Record<string, unknown>[]) {
    const plain = { ...r } as Record<string, unknown>;
    for (const [k, v] of Object.entries(plain)) if (typeof v === 'bigint') plain[k] = Number(v);
    rows.set(String(plain[key]), plain);
  }
  tbl.close();
  return { count, rows };
}

/** The "newest seq wins" model of what a table must contain after merging `generations`. */
export function newestPerKey(generations: { seq: number; rows: Record<string, unknown>[] }[], key = 'id'): Map<string, Record<string, unknown>> {
  const model = new Map<string, Record<string, unknown>>();
  for (const g of [...generations].sort((a, b) => a.seq - b.seq)) {
    for (const r of g.rows) model.set(String(r[key]), { ...r, _seq: g.seq });
  }
  return model;
}
