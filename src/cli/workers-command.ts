import { formatBytes } from '../config/bytes';
import { liveRecords, type WorkerRecord } from '../worker/registry';
import type { Parsed } from './args';
import { readConfig } from './context';

// `turnstile workers [--json]`: the live workers of the fleet that shares TURNSTILE_DATA,
// from their registry records (src/worker/registry.ts), with what each has reserved.

export interface WorkerRow {
  identity: string;
  host: string;
  pid: number;
  taskQueue: string;
  /** The build id of the workflow code it runs: the deployment version it polls as. */
  buildId: string | null;
  budgetBytes: number;
  reservedBytes: number;
  headroomBytes: number;
  /** Units running (poll claims not counted). */
  running: { unit: string; activity: string; reservedBytes: number; sinceSecs: number }[];
  /** Poll claims held: headroom kept for what a poll may bring. */
  pollClaims: number;
  /** Units that went on without their claim marked used (src/worker/memory-ledger.ts); 0 is healthy. */
  unmarkedTakes: number;
  /** Eager activity tasks the SDK asked a slot for, got one (slot and claim free at once), and ran. */
  eager: { asked: number; granted: number; used: number };
  lastSeenSecs: number;
}

export function workerRows(records: WorkerRecord[], nowMs: number): WorkerRow[] {
  return records.map((r) => {
    const units = r.running.filter((h) => h.activity !== 'poll');
    const reserved = units.reduce((n, h) => n + h.bytes, 0) + r.cacheBytes;
    return {
      identity: r.identity,
      host: r.host,
      pid: r.pid,
      taskQueue: r.taskQueue,
      buildId: r.buildId ?? null,
      budgetBytes: r.budgetBytes,
      reservedBytes: reserved,
      headroomBytes: r.budgetBytes - reserved,
      running: units.map((h) => ({ unit: h.unit ?? h.id, activity: h.activity, reservedBytes: h.bytes, sinceSecs: Math.max(0, nowMs - h.sinceMs) / 1000 })),
      pollClaims: r.running.length - units.length,
      unmarkedTakes: r.unmarkedTakes ?? 0,
      eager: r.eager ?? { asked: 0, granted: 0, used: 0 },
      lastSeenSecs: Math.max(0, nowMs - r.lastSeenMs) / 1000,
    };
  });
}

export function formatWorkers(rows: WorkerRow[]): string {
  if (rows.length === 0) return 'no live workers (none has refreshed its record under <data>/_workers in the last 10 s)';
  const lines: string[] = [];
  for (const w of rows) {
    lines.push(
      `${w.identity}  host ${w.host} pid ${w.pid}  build ${w.buildId ?? 'unversioned'}  budget ${formatBytes(w.budgetBytes)}  reserved ${formatBytes(w.reservedBytes)} (incl. prepared cache)  ${w.running.length} running  last seen ${w.lastSeenSecs.toFixed(1)} s ago`,
    );
    for (const u of w.running) lines.push(`  ${u.unit}  ${u.activity}  ${formatBytes(u.reservedBytes)}  for ${u.sinceSecs.toFixed(1)} s`);
  }
  return lines.join('\n');
}

export async function workers(p: Parsed): Promise<void> {
  const config = readConfig();
  const now = Date.now();
  const rows = workerRows(await liveRecords(config.dataRoot, now), now);
  console.log(p.flags.json ? JSON.stringify({ workers: rows }, null, 2) : formatWorkers(rows));
}
