import fs from 'node:fs';
import path from 'node:path';
import { storageRootOf, type StorageRoot } from './storage-root';

// The storage root this process reaches for a TURNSTILE_DATA value, with its own
// environment and file system: what a worker advertises and what a client compares.

/** The root `dataRoot` names here (`env`: the AWS variables that pick the S3 endpoint). */
export const reachedRoot = (dataRoot: string, env: NodeJS.ProcessEnv = process.env): StorageRoot => storageRootOf(dataRoot, env, canonicalLocalPath);

/**
 * A local root spelled through a symbolic link (/tmp on macOS, a volume linked into a
 * home directory) is the same root as its target. The root may not exist yet in one
 * process (directories are made on first write), so the longest part of it that exists
 * is resolved and the rest kept as written: two processes then agree whether or not the
 * directory has been made.
 */
export function canonicalLocalPath(p: string): string {
  const absolute = path.resolve(p);
  const missing: string[] = [];
  for (let at = absolute; ; at = path.dirname(at)) {
    try {
      return path.join(fs.realpathSync.native(at), ...missing);
    } catch {
      if (path.dirname(at) === at) return absolute;
      missing.unshift(path.basename(at));
    }
  }
}
