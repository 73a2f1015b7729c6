import { arrow, type ArrowTable } from '../storage/arrow';
import { tableFromRows, type Row } from '../storage/records';
import type { TableHandle } from '../storage/table-handle';
import { castForTable } from './cast-columns';
import { splitByShard } from './route-rows';
import type { WriteGenerationResult } from './write-generation';

// A write without a shard: the rows are cast to the table's schema, routed to the
// shards owning their keys, and sealed as one generation per shard through the
// writer's own per-shard write (pressure, demand signal), in shard order.

export interface RoutedWriteResult extends WriteGenerationResult {
  shard: string;
}

export interface RoutedWriteTarget {
  table: TableHandle;
  write: (shard: string, rows: ArrowTable) => Promise<WriteGenerationResult>;
}

/**
 * Everything is checked before the first seal (types, keys), so refused rows
 * (RowsRejectedError) seal nothing; `onSealed` hears each seal as it lands, so a later
 * shard's failure still leaves the earlier seals reported.
 */
export async function writeRouted(
  target: RoutedWriteTarget,
  rows: ArrowTable | readonly Row[],
  onSealed?: (r: RoutedWriteResult) => void,
): Promise<RoutedWriteResult[]> {
  const { meta } = target.table;
  const input = rows instanceof arrow.Table ? rows : tableFromRows(rows as readonly Row[], meta.key);
  const parts = splitByShard(await castForTable(target.table, input), meta.key, meta.shards);
  const out: RoutedWriteResult[] = [];
  for (const [shard, part] of parts) {
    const r = { shard, ...(await target.write(shard, part)) };
    out.push(r);
    onSealed?.(r);
  }
  return out;
}
