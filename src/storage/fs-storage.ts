import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import { createFileExclusive, readBytesIfExists, writeFileAtomic } from './atomic-file';
import { withFileLock } from './lock-file.mjs';
import { insideLoc } from './location';
import { StorageEscapeError, type BytesSource, type Entry, type PatchedBytes, type Storage, type Versioned } from './storage';

// The filesystem backend: today's durable primitives (atomic-file.ts) behind the
// Storage interface. A compare-and-swap has no single syscall, so putIfMatch holds a
// lock file (`<file>.lock`, O_EXCL, see lock-file.mjs) around read-compare-write; the
// etag is the content's sha256.

const etagOf = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

export class FsStorage implements Storage {
  readonly kind = 'fs' as const;

  constructor(readonly root: string) {}

  private at(loc: string): string {
    if (this.root !== '/' && !insideLoc(this.root, loc)) throw new StorageEscapeError(this.root, loc);
    return loc;
  }

  async read(loc: string, alloc?: (bytes: number) => Buffer): Promise<Buffer | null> {
    return readBytesIfExists(this.at(loc), alloc);
  }

  async readVersioned(loc: string): Promise<Versioned | null> {
    const bytes = await this.read(loc);
    return bytes && { bytes, etag: etagOf(bytes) };
  }

  async stat(loc: string): Promise<{ size: number; mtimeMs: number } | null> {
    const st = await fs.lstat(this.at(loc)).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return null;
      throw err;
    });
    return st && st.isFile() ? { size: st.size, mtimeMs: st.mtimeMs } : null;
  }

  async entriesChangedMs(dir: string): Promise<number | null> {
    const st = await fs.lstat(this.at(dir)).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return null;
      throw err;
    });
    return st && st.isDirectory() ? st.mtimeMs : null;
  }

  async putIfAbsent(loc: string, bytes: BytesSource): Promise<boolean> {
    return createFileExclusive(this.at(loc), bytes);
  }

  async put(loc: string, bytes: Uint8Array | string | PatchedBytes, opts: { durable?: boolean } = {}): Promise<void> {
    return writeFileAtomic(this.at(loc), bytes, opts);
  }

  async putIfMatch(loc: string, bytes: Uint8Array | string, etag: string | null): Promise<boolean> {
    const file = this.at(loc);
    return withFileLock(`${file}.lock`, async () => {
      const now = await readBytesIfExists(file);
      if ((now === null ? null : etagOf(now)) !== etag) return false;
      await writeFileAtomic(file, bytes);
      return true;
    });
  }

  async list(dir: string, opts: { limit?: number } = {}): Promise<Entry[]> {
    const missing = (err: NodeJS.ErrnoException): [] => {
      if (err.code === 'ENOENT') return [];
      throw err;
    };
    if (opts.limit !== undefined) {
      // Without reading a whole directory (a table's _versions grows with every commit).
      const d = await fs.opendir(this.at(dir)).catch(missing);
      if (Array.isArray(d)) return d;
      const out: Entry[] = [];
      try {
        for (let e = await d.read(); e && out.length < opts.limit; e = await d.read()) out.push({ name: e.name, isDir: e.isDirectory() });
      } finally {
        await d.close();
      }
      return out;
    }
    const entries = await fs.readdir(this.at(dir), { withFileTypes: true }).catch(missing);
    return entries.map((e) => ({ name: e.name, isDir: e.isDirectory() }));
  }

  async delete(loc: string): Promise<void> {
    await fs.rm(this.at(loc), { force: true });
  }

  async ensureDir(dir: string): Promise<void> {
    if (dir === this.root) return;
    await fs.mkdir(this.at(dir), { recursive: true });
  }

  async check(): Promise<string | null> {
    return null; // directories are created on first write, as before
  }
}
