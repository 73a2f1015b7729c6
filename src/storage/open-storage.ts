import { FsStorage } from './fs-storage';
import { isS3, resolveLoc } from './location';
import { S3Storage } from './s3-storage';
import type { Storage } from './storage';

// Which backend serves a location: s3:// locations the S3 one, anything else the
// filesystem. One instance per root, so an S3 client (and its connection pool) is made
// once per process.

const stores = new Map<string, Storage>();

/** The backend confined to `root` (TURNSTILE_DATA): a local directory or s3://BUCKET/PREFIX. */
export function storageAt(root: string): Storage {
  let s = stores.get(root);
  if (!s) {
    const r = resolveLoc(root);
    s = isS3(r) ? new S3Storage(r) : new FsStorage(r);
    stores.set(root, s);
  }
  return s;
}

/**
 * The backend for a single location handed around without its root (a prepared batch's
 * path in an activity result): the local filesystem, or the location's bucket.
 */
export function storageOf(loc: string): Storage {
  return storageAt(isS3(loc) ? `s3://${resolveLoc(loc).slice(5).split('/')[0]}` : '/');
}
