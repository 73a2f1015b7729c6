import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { TEMP_MARKER } from './layout';

// Durable, atomic file writes. Kept apart from arrow.ts so that modules writing only
// JSON (table.json, SEALED.json, GC.json) never load apache-arrow: the CLI's operator
// commands start faster without it.

/** A temp name in the same directory (rename must not cross file systems) that gc can recognise. */
export function tempPathFor(file: string): string {
  const rand = randomBytes(4).toString('hex');
  return path.join(path.dirname(file), `${TEMP_MARKER}${process.pid}-${rand}-${path.basename(file)}`);
}

export async function fsyncDir(dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Write bytes so that readers see either nothing or the whole file, also after a
 * crash: temp file, fsync, rename, fsync of the directory (makes the rename durable).
 */
export async function writeFileAtomic(file: string, bytes: Uint8Array | string): Promise<void> {
  const tmp = tempPathFor(file);
  const handle = await fs.open(tmp, 'wx');
  try {
    await handle.writeFile(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await fs.rename(tmp, file);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
  await fsyncDir(path.dirname(file));
}
