import { parseRootKey, rootKey, type StorageRoot } from '../storage/storage-root';

// A worker's Temporal identity carries the storage root it uses, so a client can learn
// from the task queue's pollers (DescribeTaskQueue, the one place every worker of a
// queue shows up whatever root it has) where the table's workers look, and refuse to
// write anywhere else. The root follows the name after ROOT_MARK, URI-escaped so the
// identity has no whitespace (start-up lines and logs print it as one word).

const ROOT_MARK = ';root=';
/** The server refuses polls whose identity is longer (its limit.maxIDLength, 1000 by default). */
export const MAX_IDENTITY_CHARS = 1000;

/** `name;root=<root key>`; just `name` when that would be too long for the server. */
export function identityWithRoot(name: string, root: StorageRoot): string {
  const identity = `${name}${ROOT_MARK}${encodeURI(rootKey(root))}`;
  return identity.length <= MAX_IDENTITY_CHARS ? identity : name;
}

/** The root an identity advertises; null for identities without one (older releases, other programs). */
export function rootOfIdentity(identity: string): StorageRoot | null {
  const at = identity.lastIndexOf(ROOT_MARK);
  if (at < 0) return null;
  try {
    return parseRootKey(decodeURI(identity.slice(at + ROOT_MARK.length)));
  } catch {
    return null;
  }
}
