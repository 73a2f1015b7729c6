// One storage interface for everything Turnstile writes next to the Lance table
// (generations, SEALED.json, prepared batches and checkpoints, table.json, GC.json),
// with a filesystem and an S3 backend. What callers rely on:
// - putIfAbsent is the only way a name is claimed (a generation's seq, table.json): of
//   racing writers exactly one gets true, and the winner's bytes are complete for every
//   reader (fs: temp file + fsync + link; S3: PutObject with If-None-Match: *).
// - put replaces atomically: a reader sees the old bytes or the new, never a mix.
// - putIfMatch is a compare-and-swap on the etag readVersioned returned (null: the
//   object must not exist), for watermarks that must only grow (GC.json) and for
//   read-modify-write of table.json.
// Every location must lie under the backend's root: a name that climbs out with `..`
// or an absolute path is refused before any I/O (StorageEscapeError).

/**
 * Bytes that are complete only once `finish()` has read them: `bytes` holds everything
 * but a few spans (a checksum of the rest), and `finish` computes those spans without
 * changing `bytes`. A file store writes `bytes` on the thread pool while `finish` runs
 * on this thread (in slices, letting other callbacks run between them), then writes the
 * spans in place before the file gets its name.
 */
export interface PatchedBytes {
  bytes: Buffer;
  finish(): Promise<readonly Patch[]>;
}

export interface Patch {
  at: number;
  bytes: Buffer;
}

/** Bytes, or a function producing them (lets a file store open its temp file meanwhile). */
export type BytesSource = Uint8Array | string | (() => Promise<Uint8Array | string | PatchedBytes>);

/** The finished bytes of what a BytesSource produced, for a store that needs them all before writing. */
export async function finishedBytes(data: Uint8Array | string | PatchedBytes): Promise<Uint8Array | string> {
  if (typeof data === 'string' || data instanceof Uint8Array) return data;
  for (const p of await data.finish()) p.bytes.copy(data.bytes, p.at);
  return data.bytes;
}

export interface Versioned {
  bytes: Buffer;
  etag: string;
}

export interface Entry {
  name: string;
  isDir: boolean;
}

export interface Storage {
  readonly kind: 'fs' | 's3';
  readonly root: string;
  /**
   * The bytes, or null when there is no such object. With `alloc` a backend may place
   * them in memory from it (fs does; scratch.ts), valid only as long as that memory is.
   */
  read(loc: string, alloc?: (bytes: number) => Buffer): Promise<Buffer | null>;
  readVersioned(loc: string): Promise<Versioned | null>;
  stat(loc: string): Promise<{ size: number; mtimeMs: number } | null>;
  /**
   * When an entry of directory `dir` was last created, renamed or removed, where the
   * backend records it (a filesystem directory's mtime); null on S3, which has no
   * directories, and when there is no such directory.
   */
  entriesChangedMs(dir: string): Promise<number | null>;
  /**
   * Creates `loc` durably unless it exists; false (nothing written) when it does. The
   * bytes may be a function producing them: fs opens its temp file meanwhile.
   */
  putIfAbsent(loc: string, bytes: BytesSource): Promise<boolean>;
  /** Replaces `loc` atomically; `durable: false` lets fs skip the fsyncs (hints only). PatchedBytes are patched in place. */
  put(loc: string, bytes: Uint8Array | string | PatchedBytes, opts?: { durable?: boolean }): Promise<void>;
  /** Replaces `loc` only if its etag is still `etag` (null: only if absent); false otherwise. */
  putIfMatch(loc: string, bytes: Uint8Array | string, etag: string | null): Promise<boolean>;
  /** Direct children of the directory (or key prefix) `dir`, at most `limit`; [] when there is none. */
  list(dir: string, opts?: { limit?: number }): Promise<Entry[]>;
  /** Removes `loc`; absent is fine. */
  delete(loc: string): Promise<void>;
  /** fs: mkdir -p; S3 has no directories. */
  ensureDir(dir: string): Promise<void>;
  /** One line naming what is wrong with the root (missing bucket, credentials, endpoint), or null. */
  check(): Promise<string | null>;
}

export class StorageEscapeError extends Error {
  constructor(root: string, loc: string) {
    super(`${loc} is outside the storage root ${root}: refused`);
    this.name = 'StorageEscapeError';
  }
}

/** Thrown for a missing object where callers expect a file error: same code as fs. */
export function notFound(loc: string): NodeJS.ErrnoException {
  const err = new Error(`ENOENT: no such file or directory, open '${loc}'`) as NodeJS.ErrnoException;
  err.code = 'ENOENT';
  return err;
}
