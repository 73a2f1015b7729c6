import type { StatusView } from '../../workflows/messages';
import { outsideCompactions, type MaintenanceDecision } from '../policy/adopted-log';
import type { PeriodicKind } from '../policy/types';
import type { LanceTable } from '../storage/lance-table';

// `shadow-report`: what Turnstile decided for an adopted table (or, in active mode, did)
// next to what happened to the table: its versions, fragment counts and the compactions
// someone else ran, from the workflow's log of looks and the table itself now.

export interface ShadowReport {
  table: string;
  uri: string;
  mode: string;
  sinceMs: number;
  nowMs: number;
  table_: {
    version: number;
    /** Versions since the first look: commits of anyone's. */
    commitsSinceFirstLook: number;
    /** Of those, Turnstile's (carried-out decisions that commit). */
    turnstileCommits: number;
    versionsKept: number;
    oldestVersionAgeSecs: number | null;
    fragments: number;
    smallFragments: number;
    fragmentsMax: number;
    fragmentsMin: number;
    rows: number;
    bytes: number;
    outsideCompactions: number;
  };
  turnstile: {
    /** predictedBytesRecent: summed over this kind's `recent` decisions among the log's last ones. */
    perKind: Record<PeriodicKind, { decided: number; carriedOut: number; recent: number; predictedBytesRecent: number }>;
    commitConflicts: number;
    recent: MaintenanceDecision[];
  };
}

export async function shadowReport(view: StatusView, tbl: LanceTable, nowMs: number): Promise<ShadowReport> {
  const log = view.adoptedLog!;
  const [version, stats, versions] = await Promise.all([tbl.version(), tbl.stats(), tbl.listVersions()]);
  const oldest = versions.reduce((m, v) => Math.min(m, new Date(v.timestamp).getTime()), Infinity);
  const frags = [...log.samples.map((s) => s.fragments), stats.fragmentStats.numFragments];
  const first = log.samples[0];
  const perKind = {} as ShadowReport['turnstile']['perKind'];
  for (const k of ['optimize', 'index', 'gc'] as const) {
    const recent = log.decisions.filter((d) => d.kind === k);
    perKind[k] = { ...log.totals[k], recent: recent.length, predictedBytesRecent: recent.reduce((n, d) => n + d.predictedBytes, 0) };
  }
  return {
    table: view.table,
    uri: view.adopted!.uri,
    mode: view.adopted!.mode,
    sinceMs: log.sinceMs,
    nowMs,
    table_: {
      version,
      commitsSinceFirstLook: first ? version - first.version : 0,
      turnstileCommits: log.totals.optimize.carriedOut + log.totals.index.carriedOut + log.totals.gc.carriedOut,
      versionsKept: versions.length,
      oldestVersionAgeSecs: Number.isFinite(oldest) ? Math.round((nowMs - oldest) / 1000) : null,
      fragments: stats.fragmentStats.numFragments,
      smallFragments: stats.fragmentStats.numSmallFragments,
      fragmentsMax: Math.max(...frags),
      fragmentsMin: Math.min(...frags),
      rows: stats.numRows,
      bytes: stats.totalBytes,
      outsideCompactions: log.outsideTotal ?? outsideCompactions(log).length,
    },
    turnstile: { perKind, commitConflicts: view.counters.commitConflicts ?? 0, recent: log.decisions.slice(-10) },
  };
}

export function formatShadowReport(r: ShadowReport, bytes: (n: number) => string): string {
  const t = r.table_;
  const mins = Math.round((r.nowMs - r.sinceMs) / 60_000);
  const verb = r.mode === 'shadow' ? 'would have run' : 'ran';
  const lines = [
    `table ${r.table} (${r.uri}), mode ${r.mode}, log since ${new Date(r.sinceMs).toISOString()} (${mins} min)`,
    `the table: version ${t.version}, ${t.commitsSinceFirstLook} commits since the first look (${t.turnstileCommits} by Turnstile), ${t.versionsKept} versions kept` +
      (t.oldestVersionAgeSecs === null ? '' : ` (oldest ${t.oldestVersionAgeSecs} s)`),
    `  fragments ${t.fragments} now (${t.smallFragments} small), ${t.fragmentsMin}..${t.fragmentsMax} over the looks; ${t.rows} rows, ${bytes(t.bytes)}`,
    `  compactions someone else ran: ${t.outsideCompactions}`,
    `Turnstile ${verb}:`,
  ];
  for (const [k, v] of Object.entries(r.turnstile.perKind)) {
    lines.push(`  ${k.padEnd(8)} decided ${v.decided}, carried out ${v.carriedOut}; predicted rewrite of the last ${v.recent}: ${bytes(v.predictedBytesRecent)}`);
  }
  lines.push(`  commit conflicts with outside writers: ${r.turnstile.commitConflicts}`);
  if (r.turnstile.recent.length > 0) {
    lines.push('recent decisions:');
    for (const d of r.turnstile.recent) {
      lines.push(`  ${new Date(d.atMs).toISOString()}  ${d.kind.padEnd(8)} ${d.carriedOut ? 'ran  ' : 'shadow'}  ${d.reason}  (${d.why})`);
    }
  }
  return lines.join('\n');
}
