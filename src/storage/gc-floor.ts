import { joinLoc } from './location';
import { shardDir } from './layout';
import type { TableFiles } from './table-files';

// Per shard, the highest seq whose generation file gc has deleted (`GC.json`). gc only
// deletes generations at or below merged-through, so this is a recorded lower bound of
// merged-through that survives the workflow: a table workflow started afresh (after a
// terminate) has merged-through 0, and its merges skip what gc recorded as merged
// instead of failing on the missing files. Only gc's own record counts: a generation
// missing for any other reason still fails its unit, so nothing is skipped silently.

const gcFile = (files: TableFiles, shard: string): string => joinLoc(shardDir(files.layout, shard), 'GC.json');

function parseFloor(file: string, bytes: Buffer | null): number {
  if (bytes === null) return 0;
  const text = bytes.toString('utf8');
  const v = (JSON.parse(text) as { deletedThroughSeq?: unknown }).deletedThroughSeq;
  if (!Number.isSafeInteger(v) || (v as number) < 0) throw new Error(`${file}: invalid contents ${JSON.stringify(text)}`);
  return v as number;
}

export async function readGcFloor(files: TableFiles, shard: string): Promise<number> {
  const file = gcFile(files, shard);
  return parseFloor(file, await files.storage.read(file));
}

/**
 * Written before the files go, so a gc that dies half-way leaves a floor that covers
 * them. A compare-and-swap on the floor's etag, so it only ever grows, also when a
 * late attempt of a presumed-dead gc writes at the same time (no lock across hosts).
 */
export async function raiseGcFloor(files: TableFiles, shard: string, seq: number): Promise<void> {
  const file = gcFile(files, shard);
  for (;;) {
    const now = await files.storage.readVersioned(file);
    if (seq <= parseFloor(file, now?.bytes ?? null)) return;
    if (await files.storage.putIfMatch(file, `${JSON.stringify({ deletedThroughSeq: seq })}\n`, now?.etag ?? null)) return;
  }
}
