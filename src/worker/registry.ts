import { createHash } from 'node:crypto';
import os from 'node:os';
import { TEMP_MARKER } from '../storage/layout';
import { joinLoc } from '../storage/location';
import { storageAt } from '../storage/open-storage';
import { pidAlive } from '../storage/pid-alive.mjs';
import type { Holding } from './memory-ledger';

// Which workers are alive, and what each holds (`turnstile workers`). Every
// worker rewrites its record under `<data root>/_workers/` every RECORD_EVERY_MS; the
// storage root is already what every worker of a fleet shares. A record counts as live
// while it is fresh (a worker killed with kill -9 stops refreshing it) and, on this
// host, while its pid is alive (so a killed worker drops out at once here). Temporal's
// own poller list (DescribeTaskQueue) knows identities but not budgets or reservations.
// Records go through the storage interface (src/storage/storage.ts), so a fleet on
// TURNSTILE_DATA=s3://... shares them as it shares the tables; they are hints, written
// without fsync (a lost record is rewritten on the next refresh).

export const RECORD_EVERY_MS = 2_000;
/** A record older than this is a dead worker's (a few missed refreshes). */
export const STALE_AFTER_MS = 10_000;

export interface WorkerRecord {
  identity: string;
  host: string;
  pid: number;
  taskQueue: string;
  /** The build id of its workflow code (src/worker/build-id.ts). */
  buildId?: string;
  budgetBytes: number;
  /** Held for the prepared-batch cache, outside the units' ledger. */
  cacheBytes: number;
  reservedBytes: number;
  /** The size of a poll claim: the largest reservation a unit may bring. */
  claimBytes: number;
  running: Holding[];
  waiting: number;
  /** Units that went on without their claim marked used (memory-ledger.ts); 0 is healthy. */
  unmarkedTakes?: number;
  /** Units that waited for their claim's mark: how many, total and longest wait (ms). */
  markWaits?: { count: number; totalMs: number; maxMs: number };
  /** Eager activity tasks: asked, granted, used (memory-slots.ts). */
  eager?: { asked: number; granted: number; used: number };
  startedAtMs: number;
  lastSeenMs: number;
}

export const registryDir = (root: string): string => joinLoc(root, '_workers');
/** File names stay well under the 255 bytes file systems allow, however long the identity (it carries the storage root). */
const MAX_NAME_CHARS = 160;
function fileOf(root: string, identity: string): string {
  const safe = identity.replace(/[^A-Za-z0-9@._-]/g, '_');
  const name = safe.length <= MAX_NAME_CHARS ? safe : `${safe.slice(0, MAX_NAME_CHARS - 17)}-${createHash('sha256').update(identity).digest('hex').slice(0, 16)}`;
  return joinLoc(registryDir(root), `${name}.json`);
}

export async function writeRecord(root: string, rec: WorkerRecord): Promise<void> {
  const store = storageAt(root);
  await store.ensureDir(registryDir(root));
  await store.put(fileOf(root, rec.identity), JSON.stringify(rec), { durable: false });
}

export async function removeRecord(root: string, identity: string): Promise<void> {
  await storageAt(root).delete(fileOf(root, identity));
}

export function isLive(rec: WorkerRecord, nowMs: number, host = os.hostname()): boolean {
  if (nowMs - rec.lastSeenMs > STALE_AFTER_MS) return false;
  return rec.host !== host || pidAlive(rec.pid);
}

/** The live workers' records, by identity. Unreadable or half-written files are skipped. */
export async function liveRecords(root: string, nowMs = Date.now()): Promise<WorkerRecord[]> {
  const store = storageAt(root);
  const names = (await store.list(registryDir(root)).catch(() => [])).map((e) => e.name);
  const out: WorkerRecord[] = [];
  for (const name of names.filter((n) => n.endsWith('.json') && !n.includes(TEMP_MARKER))) {
    try {
      const bytes = await store.read(joinLoc(registryDir(root), name));
      if (!bytes) continue;
      const rec = JSON.parse(bytes.toString('utf8')) as WorkerRecord;
      if (isLive(rec, nowMs)) out.push(rec);
    } catch {
      // a record being replaced, or not ours
    }
  }
  return out.sort((a, b) => a.identity.localeCompare(b.identity));
}
