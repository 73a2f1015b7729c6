import { mulberry32 } from '../util/mulberry32';
import { shardRouter } from '../storage/routing';

// Deterministic test and demo rows. Keys come from [a, b] and route to `shard`, so a
// generated batch can be sealed into that shard without breaking key ownership.

export interface GeneratedRow {
  id: number;
  value: string;
  n: number;
  [column: string]: unknown;
}

export interface GenerateRowsOptions {
  /** Inclusive key range. */
  keys: [number, number];
  /** Rows wanted; default every key of the range that routes to the shard. */
  count?: number;
  shard: string;
  shards: readonly string[];
  seed?: number;
}

export function generateRows(opts: GenerateRowsOptions): GeneratedRow[] {
  const [a, b] = opts.keys;
  if (!Number.isSafeInteger(a) || !Number.isSafeInteger(b) || a > b) throw new Error(`keys: ${a}..${b} is not a valid integer range`);
  if (!opts.shards.includes(opts.shard)) throw new Error(`shard ${opts.shard} is not one of ${opts.shards.join(', ')}`);
  const seed = opts.seed ?? 1;
  const candidates: number[] = [];
  const ownerOf = shardRouter(opts.shards);
  for (let k = a; k <= b; k++) if (ownerOf(k) === opts.shard) candidates.push(k);
  const count = opts.count ?? candidates.length;
  if (count > candidates.length) {
    throw new Error(`only ${candidates.length} keys of ${a}..${b} route to shard ${opts.shard}; asked for ${count} rows`);
  }
  const rand = mulberry32(seed);
  // Partial Fisher-Yates: a seeded sample without repeats, then key order for readability.
  for (let i = 0; i < count; i++) {
    const j = i + Math.floor(rand() * (candidates.length - i));
    [candidates[i], candidates[j]] = [candidates[j] as number, candidates[i] as number];
  }
  return candidates
    .slice(0, count)
    .sort((x, y) => x - y)
    .map((id) => ({ id, value: `v${seed}-${id}`, n: Math.round(rand() * 1e6) / 100 }));
}
