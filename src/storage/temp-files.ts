import { randomBytes } from 'node:crypto';
import { unlinkSync } from 'node:fs';
import fs, { type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { TEMP_MARKER } from './layout';

// Temp files of the durable writes (atomic-file.ts): their names, their removal in the
// background, and a spare one kept open per directory for the next exclusive create.

// Unique per process by the counter, across processes (also a reused pid) by the random
// tag: drawn once, since a randomBytes call per name cost ~40 us of a seal's main thread
// (two names per seal, profiled). Opening with 'wx' still refuses any collision.
const processTag = randomBytes(4).toString('hex');
let tempCount = 0;

/** A temp name in the same directory (rename must not cross file systems) that gc can recognise. */
export function tempPathFor(file: string): string {
  const cut = file.lastIndexOf(path.sep) + 1;
  return `${file.slice(0, cut)}${TEMP_MARKER}${process.pid}-${processTag}${(tempCount++).toString(36)}-${file.slice(cut)}`;
}

/** Closes and unlinks at once (Linux unlinks an open file): unlink, not rm, whose lstat and directory walk cost a seal's main thread ~0.4 ms (profiled). */
export async function discardTemp(handle: FileHandle, tmp: string): Promise<void> {
  const unlinking = fs.unlink(tmp).catch((err: unknown) => {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  });
  await handle.close().catch(() => undefined);
  await unlinking;
}

const cleanups = new Set<Promise<void>>();

/** Runs `work` (a temp file's removal) after the caller goes on; settleFileCleanups waits for it. */
export function inBackground(work: Promise<void>): void {
  const cleanup = work.catch(() => undefined);
  cleanups.add(cleanup);
  void cleanup.finally(() => cleanups.delete(cleanup));
}

/** Waits until every temp name left behind so far is gone (or failed to go), spares included. */
export async function settleFileCleanups(): Promise<void> {
  // A cleanup may open a spare (atomic-file.ts), so both are emptied until neither refills.
  for (;;) {
    while (cleanups.size > 0) await Promise.all([...cleanups]);
    if (spares.size === 0) return;
    for (const dir of [...spares.keys()]) dropSpare(dir);
  }
}

// A spare: a temp file opened in the background after an exclusive create, for the next
// create in the same directory (the next seal of the shard). A seal then finds its file
// open instead of waiting for the open behind its encode: 2,500-row seals, side by side
// in one process, ratio to the raw durable write 0.77-1.05 with, 0.74-0.87 without
// (bench/README.md).
// Bounded in number and in idle time: a writer of many shards holds a few descriptors,
// and a spare is gone long before gc calls an unused temp file a leftover
// (TEMP_MIN_AGE_MS, 10 minutes).

export interface OpenTemp {
  tmp: string;
  opening: Promise<FileHandle>;
  /** Opened ahead by offerSpare: its name may be gone by now (the directory replaced). */
  spare: boolean;
}

interface Spare extends OpenTemp {
  timer: NodeJS.Timeout;
}

const spares = new Map<string, Spare>();
export const MAX_SPARES = 8;
export const SPARE_IDLE_MS = 2_000;
let exitHook = false;

function openFresh(file: string): OpenTemp {
  const tmp = tempPathFor(file);
  const opening = fs.open(tmp, 'wx');
  // Handled at once: a failed open must not be an unhandled rejection while it waits.
  opening.catch(() => undefined);
  return { tmp, opening, spare: false };
}

/** A temp file for `file`, opened or being opened: the directory's spare when there is one. */
export function openTemp(file: string, useSpare = true): OpenTemp {
  const dir = path.dirname(file);
  const spare = useSpare ? spares.get(dir) : undefined;
  if (!spare) return openFresh(file);
  spares.delete(dir);
  clearTimeout(spare.timer);
  return { tmp: spare.tmp, opening: spare.opening, spare: true };
}

/** Opens a spare temp file in `file`'s directory for the next openTemp there. */
export function offerSpare(file: string): void {
  const dir = path.dirname(file);
  if (spares.has(dir)) return;
  if (spares.size >= MAX_SPARES) dropSpare(spares.keys().next().value as string);
  const { tmp, opening } = openFresh(path.join(dir, 'spare'));
  const timer = setTimeout(() => dropSpare(dir), SPARE_IDLE_MS);
  timer.unref();
  spares.set(dir, { tmp, opening, spare: true, timer });
  if (!exitHook) {
    exitHook = true;
    // A process that exits without settling leaves no spare behind (SIGKILL does: gc).
    process.once('exit', () => {
      for (const s of spares.values()) {
        try {
          unlinkSync(s.tmp);
        } catch {
          // already gone
        }
      }
    });
  }
}

function dropSpare(dir: string): void {
  const s = spares.get(dir);
  if (!s) return;
  spares.delete(dir);
  clearTimeout(s.timer);
  inBackground(s.opening.then((h) => discardTemp(h, s.tmp), () => undefined));
}

/** Temp files kept open as spares (tests). */
export const spareCount = (): number => spares.size;
