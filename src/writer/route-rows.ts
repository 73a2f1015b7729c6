import type { ArrowTable } from '../storage/arrow';
import { takeRows } from '../storage/arrow-columns';
import { shardRouter, type Key } from '../storage/routing';
import { RowsRejectedError } from './errors';

// Routing a writer's rows to their shards: every key has one owner (shardOfKey), and a
// batch of mixed keys is sealed as one generation per shard that owns some of them.

/** The rows of `table` grouped by the shard owning their key, in the order of `shards`; only shards with rows. */
export function splitByShard(table: ArrowTable, key: string, shards: readonly string[]): Map<string, ArrowTable> {
  const keys = table.getChild(key);
  if (!keys) throw new RowsRejectedError(`key column ${key} is missing (columns: ${table.schema.names.join(', ')})`);
  const rows = new Map<string, number[]>(shards.map((s) => [s, []]));
  const ownerOf = shardRouter(shards);
  for (let i = 0; i < keys.length; i++) {
    const k = keys.get(i) as Key | null;
    if (k === null || k === undefined) throw new RowsRejectedError(`key column ${key}: row ${i} has a null key`);
    rows.get(shards.length === 1 ? shards[0]! : ownerOf(k))!.push(i);
  }
  const owners = [...rows].filter(([, r]) => r.length > 0);
  // One owner: the table as it is, no copy.
  if (owners.length === 1) return new Map([[owners[0]![0], table]]);
  return new Map(owners.map(([shard, r]) => [shard, takeRows(table, r)]));
}

/** A key of `parts` (from splitByShard) that `shard` does not own, with its owner; null when all are `shard`'s. */
export function foreignKey(parts: ReadonlyMap<string, ArrowTable>, key: string, shard: string): { key: unknown; owner: string } | null {
  for (const [owner, part] of parts) if (owner !== shard) return { key: part.getChild(key)!.get(0), owner };
  return null;
}
