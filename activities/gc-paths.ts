import path from 'node:path';
import { lanceTableDir } from '../src/storage/lance-table';
import { parseGenerationName, parsePreparedName, TEMP_MARKER, tableLayout } from '../src/storage/layout';

// Which paths gc may ever delete, checked by both planGc and gc: merged generation
// files, prepared batches, and temporary leftovers, all inside the table's own
// directories. SEALED.json and table.json never match.

export const TEMP_MIN_AGE_MS = 10 * 60_000;

const inside = (dir: string, p: string): boolean => {
  const rel = path.relative(dir, p);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel);
};

export function lanceDataDir(root: string, table: string): string {
  return path.join(lanceTableDir(root, table), 'data');
}

/** A generation file (gen/<shard>/<seq>.arrow) or a prepared batch of this table. */
export function isDeletableFile(root: string, table: string, file: string): boolean {
  const l = tableLayout(root, table);
  const p = path.resolve(file);
  const name = path.basename(p);
  if (path.dirname(p) === path.resolve(l.prepared)) return parsePreparedName(name) !== null;
  return path.dirname(path.dirname(p)) === path.resolve(l.gen) && parseGenerationName(name) !== null;
}

/** A temp leftover: a TEMP_MARKER name under the table's meta dir, or data/.tmp* of its Lance table. */
export function isTempFile(root: string, table: string, file: string): boolean {
  const p = path.resolve(file);
  const name = path.basename(p);
  if (inside(path.resolve(tableLayout(root, table).meta), p)) return name.includes(TEMP_MARKER);
  return path.dirname(p) === path.resolve(lanceDataDir(root, table)) && name.startsWith('.tmp');
}
