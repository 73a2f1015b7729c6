import path from 'node:path';
import { readTextIfExists, writeFileAtomic } from './atomic-file';
import { shardDir, tableLayout } from './layout';

// Per shard, the highest seq whose generation file gc has deleted (`GC.json`). gc only
// deletes generations at or below merged-through, so this is a recorded lower bound of
// merged-through that survives the workflow: a table workflow started afresh (after a
// terminate) has merged-through 0, and its merges skip what gc recorded as merged
// instead of failing on the missing files. Only gc's own record counts: a generation
// missing for any other reason still fails its unit, so nothing is skipped silently.

const gcFile = (root: string, table: string, shard: string): string => path.join(shardDir(tableLayout(root, table), shard), 'GC.json');

export async function readGcFloor(root: string, table: string, shard: string): Promise<number> {
  const file = gcFile(root, table, shard);
  const text = await readTextIfExists(file);
  if (text === null) return 0;
  const v = (JSON.parse(text) as { deletedThroughSeq?: unknown }).deletedThroughSeq;
  if (!Number.isSafeInteger(v) || (v as number) < 0) throw new Error(`${file}: invalid contents ${JSON.stringify(text)}`);
  return v as number;
}

/** Written before the files go, so a gc that dies half-way leaves a floor that covers them. */
export async function raiseGcFloor(root: string, table: string, shard: string, seq: number): Promise<void> {
  if (seq <= (await readGcFloor(root, table, shard))) return;
  await writeFileAtomic(gcFile(root, table, shard), `${JSON.stringify({ deletedThroughSeq: seq })}\n`);
}
