import { describeRoot, sameRoot, type StorageRoot } from '../storage/storage-root';
import { rootOfIdentity } from '../messages/worker-identity';
import { LIVE_POLL_MS } from './busy-retry';

// Whether a client may write under its storage root: the table's workers read only
// their own root, so a seal anywhere else is never merged and the table waits forever
// for shards it cannot see. Decided from the pollers of the table's task queue, whose
// identities carry their roots (worker-identity.ts).

export interface Poller {
  identity: string;
  lastAccessMs: number | null;
}

/**
 * Why a client on `client` must not write for the workers of `taskQueue`, or null. It
 * may when any live worker uses its root, or when no live worker advertises one (none
 * runs, or only releases that do not say): a writer seals while the fleet is down, and
 * a fleet that comes up on another root is refused at the next command. A worker counts
 * as live as for queries (LIVE_POLL_MS), so for that long after a fleet moved to another
 * root its old root is still accepted too.
 */
export function rootMismatch(client: StorageRoot, taskQueue: string, pollers: readonly Poller[], nowMs: number): string | null {
  const roots = pollers.flatMap((p) => {
    if (p.lastAccessMs === null || nowMs - p.lastAccessMs > LIVE_POLL_MS) return [];
    const r = rootOfIdentity(p.identity);
    return r ? [r] : [];
  });
  if (roots.length === 0 || roots.some((r) => sameRoot(r, client))) return null;
  const theirs = [...new Set(roots.map(describeRoot))].sort();
  return `TURNSTILE_DATA: ${describeRoot(client)} is not the storage root of the workers on task queue ${taskQueue}; accepted: ${theirs.join(' or ')}, the root they use`;
}
