import fsSync from 'node:fs';
import fs, { type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { yieldToEventLoop } from '../util/event-loop';
import { finishedBytes, type BytesSource, type PatchedBytes } from './storage';
import { discardTemp, inBackground, offerSpare, openTemp, tempPathFor, type OpenTemp } from './temp-files';

export { settleFileCleanups, tempPathFor } from './temp-files';

// Durable, atomic file writes. Kept apart from arrow.ts so that modules writing only
// JSON (table.json, SEALED.json, GC.json) never load apache-arrow: the CLI's operator
// commands start faster without it.

/** A file's bytes, or null when it does not exist (any other error is thrown). */
export async function readBytesIfExists(file: string, alloc?: (bytes: number) => Buffer): Promise<Buffer | null> {
  try {
    if (!alloc) return await fs.readFile(file);
    // Into the caller's (reused) memory: readFile's new buffer is fresh memory, whose
    // first touch cost 17.6 ms per 3.6 MiB here against 1.0 ms into a reused one.
    const h = await fs.open(file, 'r');
    try {
      const { size } = await h.stat();
      const buf = alloc(size);
      let at = 0;
      while (at < size) {
        const { bytesRead } = await h.read(buf, at, size - at, at);
        if (bytesRead === 0) break;
        at += bytesRead;
      }
      // A file that shrank while being read is returned short: its checksum refuses it.
      return buf.subarray(0, at);
    } finally {
      await h.close();
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

export async function fsyncDir(dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}


/** Write (and unless told otherwise fsync) a new file; the caller renames it into place. */
async function writeNew(file: string, bytes: Uint8Array | string | PatchedBytes, sync: boolean): Promise<void> {
  const handle = await fs.open(file, 'wx');
  try {
    await writeProduced(handle, bytes);
    if (sync) await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Write bytes so that readers see either nothing or the whole file, also after a
 * crash: temp file, fsync, rename, fsync of the directory (makes the rename durable).
 * `durable: false` skips both fsyncs, for files derived from durable ones (prepared
 * batches, checkpoints): readers still see all or nothing while the OS runs, and what
 * an OS crash loses or damages is made again (every reader checks the checksum).
 */
export async function writeFileAtomic(file: string, bytes: Uint8Array | string | PatchedBytes, opts: { durable?: boolean } = {}): Promise<void> {
  const durable = opts.durable ?? true;
  const tmp = tempPathFor(file);
  try {
    await writeNew(tmp, bytes, durable);
    await fs.rename(tmp, file);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
  if (durable) await fsyncDir(path.dirname(file));
}

/**
 * Create `file` durably only if no file of that name exists: the bytes go to a temp
 * file, which is hard-linked to its name (link fails with EEXIST instead of replacing,
 * so of several processes racing for one name exactly one wins) and only then fsynced.
 * Returns false, leaving nothing behind, when the name was taken.
 *
 * Why no fsync of the directory: the link changes the file's inode (its link count) in
 * the same journal transaction as the directory entry, and fsync of the file commits
 * that transaction on journaling file systems (ext4, xfs, btrfs), so the name is durable
 * when fsync returns: one journal commit per seal instead of two. Readers may see the
 * name before the fsync; the bytes are complete by then (the write returned), and a
 * process that dies before the fsync leaves them to the OS, which writes them. Only an
 * OS crash in that window can leave a damaged file under the name, and the checksum in
 * every sealed file refuses it (src/storage/ipc-checksum.ts); that seal was never
 * acknowledged. On a file system without a journal the name may not survive an OS crash.
 */
export async function createFileExclusive(file: string, bytes: BytesSource): Promise<boolean> {
  // Opened while the bytes are still being produced (a seal encodes meanwhile), or
  // before the call (a spare): one file operation fewer on the seal's path.
  const first = openTemp(file);
  let data: Uint8Array | string | PatchedBytes;
  try {
    data = typeof bytes === 'function' ? await bytes() : bytes;
  } catch (err) {
    // An open that failed left no temp file behind.
    await first.opening.then((h) => discardTemp(h, first.tmp), () => undefined);
    throw err;
  }
  const done = { written: false };
  try {
    return await linkNew(file, first, data, done);
  } catch (err) {
    // A spare opened before its directory was removed or replaced: once more, fresh.
    if (!first.spare || (err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    // What the first try wrote is final (digest patched in): written as it is.
    const again = done.written && typeof data === 'object' && !(data instanceof Uint8Array) ? data.bytes : data;
    return linkNew(file, openTemp(file, false), again, { written: false });
  }
}

/** createFileExclusive's write, link and fsync into the temp file `t`. */
async function linkNew(file: string, t: OpenTemp, data: Uint8Array | string | PatchedBytes, done: { written: boolean }): Promise<boolean> {
  const handle = await t.opening;
  let linked = false;
  try {
    await writeProduced(handle, data);
    done.written = true;
    try {
      // From this thread, as a small write is (writeInline): the link is one directory
      // entry, 0.03-0.09 ms of syscall against a thread-pool round trip of 0.1-0.45 ms.
      fsSync.linkSync(t.tmp, file);
      linked = true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    if (linked) await handle.sync();
  } catch (err) {
    await discardTemp(handle, t.tmp);
    throw err;
  }
  if (!linked) {
    await discardTemp(handle, t.tmp);
    return false;
  }
  // Durable now (the fsync above): closing and unlinking the temp name change nothing a
  // reader or a crash could see, so they run after the caller goes on (settleFileCleanups
  // waits for them), and so does the next spare's open. Started from the event loop's
  // next turn, not before returning: handing a file operation to the thread pool cost
  // the calling thread 0.1-0.3 ms each on these 2-core VMs (profiled), and the three
  // made up a quarter of a 2,500-row seal inside the writer-ceiling bench.
  inBackground(
    yieldToEventLoop().then(() => {
      offerSpare(file);
      return discardTemp(handle, t.tmp);
    }),
  );
  return true;
}

/**
 * Writes what a BytesSource produced. PatchedBytes go to the thread pool while this
 * thread computes their patches (a seal's sha256 runs beside its write instead of before
 * it: 100k rows, 3.7 MiB, sealed in 12.2-14.3 ms instead of 13.9-17.5, measured); the
 * patches are written into place once both are done, before the caller links the file,
 * so no name ever shows the unpatched bytes.
 */
async function writeProduced(handle: FileHandle, produced: Uint8Array | string | PatchedBytes): Promise<void> {
  const data = typeof produced === 'string' ? Buffer.from(produced) : produced;
  if (data instanceof Uint8Array) return writeWhole(handle, data);
  // Small: patched first, since more writes cost more than the overlap saves (a
  // 2,500-row seal's digest takes 0.03-0.07 ms).
  if (data.bytes.byteLength <= SLICE_BYTES) return writeWhole(handle, (await finishedBytes(data)) as Uint8Array);
  const writing = writeInSlices(handle, data.bytes);
  // Handled at once: a failed write must not be an unhandled rejection while finish runs.
  writing.catch(() => undefined);
  let patches: Awaited<ReturnType<PatchedBytes['finish']>>;
  try {
    patches = await data.finish();
  } finally {
    // Settled before anything else touches the handle (or the caller reuses the memory).
    await writing;
  }
  await Promise.all(patches.map((p) => writeAt(handle, p.bytes, p.at)));
  // The caller's buffer then holds what the file holds.
  for (const p of patches) p.bytes.copy(data.bytes, p.at);
}

const SLICE_BYTES = 512 * 1024;

/**
 * Writes up to this size go from this thread, not the thread pool: into the page cache
 * they take 0.1-0.2 ms (a 2,500-row seal, 88 KiB), while the pool's round trip took
 * 0.4-1.2 ms on average whenever a worker merged beside the writer (2 cores, measured in
 * bench/writer-ceiling.ts), which was most of the gap between a seal and a raw write.
 * Bounded, so the event loop is never held for long; fsync always goes to the pool.
 */
const INLINE_BYTES = 256 * 1024;

/** All of `bytes` at offset 0: from this thread when small (INLINE_BYTES), else in slices through the pool. */
const writeWhole = (handle: FileHandle, bytes: Uint8Array): Promise<void> =>
  bytes.byteLength <= INLINE_BYTES ? writeInline(handle, bytes) : writeInSlices(handle, bytes);

/** All of `bytes` at offset 0, synchronously (see INLINE_BYTES). */
function writeInline(handle: FileHandle, bytes: Uint8Array): Promise<void> {
  for (let done = 0; done < bytes.byteLength; ) {
    const n = fsSync.writeSync(handle.fd, bytes, done, bytes.byteLength - done, done);
    if (n <= 0) return Promise.reject(new Error(`write returned ${n} bytes`));
    done += n;
  }
  return Promise.resolve();
}

/** Slices in flight at once: a seal's 3.7 MiB all at once, while a batch of gigabytes does not fill the thread pool's queue (other reads wait behind it). */
const SLICES_IN_FLIGHT = 8;

/**
 * `bytes` from offset 0, as slices handed to the thread pool up to SLICES_IN_FLIGHT at
 * once: they need no turn of this thread between them (writeFile's slices, one after
 * another, each waited for a worker's event loop busy preparing merges), and one 3.7 MiB
 * write took 3.4 ms here against 1.3 ms in 512 KiB slices.
 */
async function writeInSlices(handle: FileHandle, bytes: Uint8Array): Promise<void> {
  let next = 0;
  const errors: unknown[] = [];
  const lane = async (): Promise<void> => {
    while (errors.length === 0 && next < bytes.byteLength) {
      const at = next;
      next += SLICE_BYTES;
      await writeAt(handle, bytes.subarray(at, at + SLICE_BYTES), at).catch((err: unknown) => errors.push(err));
    }
  };
  // Every lane settles before this returns, also when a slice fails.
  await Promise.all(Array.from({ length: Math.min(SLICES_IN_FLIGHT, Math.ceil(bytes.byteLength / SLICE_BYTES)) }, lane));
  if (errors.length > 0) throw errors[0];
}

/** All of `bytes` at `position` (a write may take less than it is given). */
async function writeAt(handle: FileHandle, bytes: Uint8Array, position: number): Promise<void> {
  for (let done = 0; done < bytes.byteLength; ) {
    const { bytesWritten } = await handle.write(bytes, done, bytes.byteLength - done, position + done);
    if (bytesWritten <= 0) throw new Error(`write returned ${bytesWritten} bytes`);
    done += bytesWritten;
  }
}

