import { lanceTableDir } from '../src/storage/lance-table';
import { parseGenerationName, parsePreparedName, TEMP_MARKER, tableLayout } from '../src/storage/layout';
import { basenameLoc, dirnameLoc, insideLoc, joinLoc, resolveLoc } from '../src/storage/location';

// Which paths gc may ever delete, checked by both planGc and gc: merged generation
// files, prepared batches, and temporary leftovers, all inside the table's own
// directories. SEALED.json and table.json never match.

export const TEMP_MIN_AGE_MS = 10 * 60_000;

export function lanceDataDir(root: string, table: string): string {
  return joinLoc(lanceTableDir(root, table), 'data');
}

/** A generation file (gen/<shard>/<seq>.arrow) or a prepared batch of this table. */
export function isDeletableFile(root: string, table: string, file: string): boolean {
  const l = tableLayout(root, table);
  const p = resolveLoc(file);
  const name = basenameLoc(p);
  if (dirnameLoc(p) === resolveLoc(l.prepared)) return parsePreparedName(name) !== null;
  return dirnameLoc(dirnameLoc(p)) === resolveLoc(l.gen) && parseGenerationName(name) !== null;
}

/** A temp leftover: a TEMP_MARKER name under the table's meta dir, or data/.tmp* of its Lance table. */
export function isTempFile(root: string, table: string, file: string): boolean {
  const p = resolveLoc(file);
  const name = basenameLoc(p);
  if (insideLoc(tableLayout(root, table).meta, p)) return name.includes(TEMP_MARKER);
  return dirnameLoc(p) === resolveLoc(lanceDataDir(root, table)) && name.startsWith('.tmp');
}
