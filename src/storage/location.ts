import path from 'node:path';

// A location is where Turnstile keeps a file: an absolute local path, or
// `s3://BUCKET/KEY` on object storage. Everything above the storage backends passes
// locations around as strings (they travel in activity results, e.g. a prepared
// batch's path), so joining, normalising and containment are done here for both kinds:
// node's path.join would fold `s3://` into `s3:/`.

export const S3_SCHEME = 's3://';

export const isS3 = (loc: string): boolean => loc.startsWith(S3_SCHEME);

export function joinLoc(base: string, ...parts: string[]): string {
  return isS3(base) ? S3_SCHEME + path.posix.join(base.slice(S3_SCHEME.length), ...parts) : path.join(base, ...parts);
}

/** Absolute and normalised (no `.`, `..` or doubled separators). */
export function resolveLoc(loc: string): string {
  if (!isS3(loc)) return path.resolve(loc);
  const rest = path.posix.normalize(loc.slice(S3_SCHEME.length)).replace(/\/+$/, '');
  return S3_SCHEME + (rest.startsWith('/') ? rest.slice(1) : rest);
}

export const dirnameLoc = (loc: string): string => (isS3(loc) ? S3_SCHEME + path.posix.dirname(loc.slice(S3_SCHEME.length)) : path.dirname(loc));

export const basenameLoc = (loc: string): string => path.posix.basename(loc);

/** True when `loc` is strictly below `dir` after normalisation (`..` cannot climb out). */
export function insideLoc(dir: string, loc: string): boolean {
  const d = resolveLoc(dir);
  const p = resolveLoc(loc);
  if (isS3(d) !== isS3(p)) return false;
  const sep = isS3(d) ? '/' : path.sep;
  return p.length > d.length && p.startsWith(d.endsWith(sep) ? d : d + sep);
}

/** `s3://BUCKET/PREFIX` split; the prefix has no leading or trailing slash. */
export function parseS3(loc: string): { bucket: string; key: string } {
  const rest = resolveLoc(loc).slice(S3_SCHEME.length);
  const i = rest.indexOf('/');
  return i < 0 ? { bucket: rest, key: '' } : { bucket: rest.slice(0, i), key: rest.slice(i + 1) };
}
