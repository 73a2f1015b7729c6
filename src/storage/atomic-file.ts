import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { TEMP_MARKER } from './layout';

// Durable, atomic file writes. Kept apart from arrow.ts so that modules writing only
// JSON (table.json, SEALED.json, GC.json) never load apache-arrow: the CLI's operator
// commands start faster without it.

/** A file's bytes, or null when it does not exist (any other error is thrown). */
export async function readBytesIfExists(file: string): Promise<Buffer | null> {
  try {
    return await fs.readFile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

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


/** Write and fsync a new file (the caller renames it into place). */
async function writeDurable(file: string, bytes: Uint8Array | string): Promise<void> {
  const handle = await fs.open(file, 'wx');
  try {
    await handle.writeFile(bytes);
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
  try {
    await writeDurable(tmp, bytes);
    await fs.rename(tmp, file);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
  await fsyncDir(path.dirname(file));
}

/** Replace a file atomically but not durably (temp + rename, no fsync): for hints a crash may lose. */
export async function writeFileReplacing(file: string, bytes: Uint8Array | string): Promise<void> {
  const tmp = tempPathFor(file);
  try {
    await fs.writeFile(tmp, bytes, { flag: 'wx' });
    await fs.rename(tmp, file);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
}

/**
 * Create `file` durably only if no file of that name exists: the temp file is written
 * and fsynced, then hard-linked to its name (link fails with EEXIST instead of
 * replacing, so of several processes racing for one name exactly one wins), then the
 * directory is fsynced. Returns false, leaving nothing behind, when the name was taken.
 */
export async function createFileExclusive(file: string, bytes: Uint8Array | string): Promise<boolean> {
  const tmp = tempPathFor(file);
  let linked = false;
  try {
    await writeDurable(tmp, bytes);
    await fs.link(tmp, file);
    linked = true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    // The unlink and the directory fsync overlap: the name made durable is the link.
    const unlinked = fs.rm(tmp, { force: true });
    if (linked) await fsyncDir(path.dirname(file));
    await unlinked;
  }
  return linked;
}
