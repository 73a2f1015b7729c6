import { formatBytes } from '../config/bytes';
import { UsageError } from '../messages/errors';
import { KINDS } from '../policy/types';
import { MAX_ENTRIES, writeAmplification, type UnitHistory, type UnitHistoryEntry } from '../policy/unit-history';
import { str, type Parsed } from './args';
import { tableArg, withTables } from './operator-commands';

// `turnstile history NAME [--since DURATION] [--json]`: the units the table ran, newest
// last, with their cost, from the workflow's own record (src/policy/unit-history.ts).

const UNIT_SECS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };
const MAX_SINCE_SECS = 30 * 86_400;
const SINCE_FORM = 'a duration like 90s, 15m, 6h or 7d, at most 30d';

/** Seconds of a duration like "15m"; a bare number is seconds. */
export function parseDuration(flag: string, v: string): number {
  const m = /^(\d+(?:\.\d+)?)([smhd]?)$/.exec(v.trim());
  const secs = m ? Number(m[1]) * UNIT_SECS[m[2] || 's']! : NaN;
  if (!(secs > 0) || secs > MAX_SINCE_SECS) throw new UsageError(`--${flag}: ${JSON.stringify(v)} is not ${SINCE_FORM}`);
  return secs;
}

const secs = (ms: number): string => (ms / 1000).toFixed(ms < 10_000 ? 2 : 1);
const clock = (ms: number): string => new Date(ms).toISOString().slice(5, 19).replace('T', ' ');

function unitName(e: UnitHistoryEntry): string {
  const range = e.fromSeq !== undefined ? ` ${e.fromSeq}-${e.toSeq}` : '';
  const riders = e.riders?.length ? ` +${e.riders.length}` : '';
  return `${e.unitId}${range}${riders}`;
}

export function formatHistory(table: string, h: UnitHistory, entries: UnitHistoryEntry[], sinceMs: number | null): string {
  const lines: string[] = [];
  const wa = writeAmplification(h);
  lines.push(`table ${table}: ${entries.length} unit${entries.length === 1 ? '' : 's'}${sinceMs !== null ? ` since ${new Date(sinceMs).toISOString()}` : ''}, newest last`);
  if (entries.length) {
    lines.push(['started (UTC)  ', 'unit'.padEnd(22), 'outcome'.padEnd(13), 'wait s', ' took s', '   rows', '    read', ' written', ' cpu s', ' reserved'].join(' '));
    for (const e of entries) {
      const wait = e.grantedAtMs !== undefined && e.readyAtMs !== undefined ? secs(e.grantedAtMs - e.readyAtMs) : '-';
      lines.push(
        [
          clock(e.startedAtMs),
          unitName(e).padEnd(22),
          e.outcome.padEnd(13),
          wait.padStart(6),
          secs(e.endedAtMs - e.startedAtMs).padStart(7),
          String(e.rows).padStart(7),
          formatBytes(e.bytesRead).padStart(8),
          formatBytes(e.bytesWritten).padStart(8),
          (e.cpuMs / 1000).toFixed(2).padStart(6),
          formatBytes(e.reservedBytes).padStart(9),
        ].join(' '),
      );
      lines.push(`    ${e.error ? `error: ${e.error}` : `why: ${e.why}`}`);
    }
  }
  lines.push('');
  lines.push(`since ${new Date(h.sinceMs).toISOString()} (all units, including those the list no longer holds):`);
  for (const k of KINDS) {
    const t = h.totals[k];
    lines.push(`  ${k.padEnd(9)} ${String(t.units).padStart(7)} units  read ${formatBytes(t.bytesRead).padStart(9)}  written ${formatBytes(t.bytesWritten).padStart(9)}  cpu ${(t.cpuMs / 1000).toFixed(1)} s`);
  }
  lines.push(`  sealed by writers ${formatBytes(h.sealedBytes)}; write amplification ${wa === null ? '-' : wa.toFixed(2)} (bytes written by all units / bytes sealed)`);
  lines.push(`The list keeps the last ${KINDS.map((k) => `${MAX_ENTRIES[k]} ${k}`).join(', ')} units.`);
  return lines.join('\n');
}

export async function history(p: Parsed): Promise<void> {
  const name = tableArg(p);
  const since = str(p, 'since');
  const sinceSecs = since === undefined ? null : parseDuration('since', since);
  const h = await withTables((t) => t.history(name));
  const sinceMs = sinceSecs === null ? null : Date.now() - sinceSecs * 1000;
  const entries = h.entries.filter((e) => sinceMs === null || e.endedAtMs >= sinceMs).sort((a, b) => a.startedAtMs - b.startedAtMs);
  if (p.flags.json) {
    console.log(JSON.stringify({ table: name, sinceMs, units: entries, totals: h.totals, sealedBytes: h.sealedBytes, writeAmplification: writeAmplification(h), recordSinceMs: h.sinceMs }, null, 2));
    return;
  }
  console.log(formatHistory(name, h, entries, sinceMs));
}
