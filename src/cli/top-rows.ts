import { formatDrain } from '../policy/drain-eta';
import type { StatusView } from '../../workflows/messages';

// `turnstile top`: one row per table, the most backed-up first. Pure: the command
// fetches every table's state and hands it here.

export interface TopRow {
  table: string;
  backlog: number;
  writePressure: number;
  /** The unit holding the write-turn, or null. */
  turn: string | null;
  /** The longest wait in the queue (seconds) and who waits. */
  longestWait: { unitId: string; waitedSecs: number } | null;
  /** Seconds until backlog 0; null: never at current rates or still measuring (see drain). */
  etaSecs: number | null;
  drain: string;
  stalled: string[];
  paused: boolean;
  /** Bytes written by the table's units per byte sealed; null before anything was sealed or from older workflows. */
  writeAmplification: number | null;
}

export function topRows(views: StatusView[]): TopRow[] {
  return views
    .map((v) => {
      const longest = v.queue.reduce<StatusView['queue'][number] | null>((m, q) => (m === null || q.waitedSecs > m.waitedSecs ? q : m), null);
      return {
        table: v.table,
        backlog: v.backlog,
        writePressure: v.writePressure,
        turn: v.turn?.unitId ?? null,
        longestWait: longest ? { unitId: longest.unitId, waitedSecs: longest.waitedSecs } : null,
        etaSecs: v.drain?.etaSecs ?? null,
        drain: v.drain ? formatDrain(v.drain) : 'unknown (workflow code from before the drain ETA)',
        stalled: [...v.stalledUnits],
        paused: v.paused || v.pausedKinds.length > 0,
        writeAmplification: v.cost?.writeAmplification ?? null,
      };
    })
    .sort((a, b) => b.backlog - a.backlog || a.table.localeCompare(b.table));
}

const pad = (s: string, n: number): string => (s.length >= n ? s.slice(0, n - 1) + '…' : s.padEnd(n));

/** The table `top` draws; `silent`: tables that did not answer; `at`: the time in its header. */
export function formatTop(rows: TopRow[], silent: { table: string; error: string }[], at: Date): string {
  const head = `turnstile top  ${at.toISOString().slice(11, 19)} UTC  ${rows.length} table${rows.length === 1 ? '' : 's'}  (sorted by backlog; Ctrl-C quits)`;
  const cols = `${pad('TABLE', 24)}${pad('BACKLOG', 9)}${pad('PRESSURE', 9)}${pad('TURN', 20)}${pad('LONGEST WAIT', 26)}${pad('ETA', 12)}${pad('W.AMP', 7)}STALLED`;
  const lines = rows.map((r) => {
    const wait = r.longestWait ? `${r.longestWait.unitId} ${r.longestWait.waitedSecs.toFixed(0)} s` : '-';
    const eta = r.etaSecs !== null ? `${Math.ceil(r.etaSecs)} s` : r.drain.startsWith('never') ? 'never' : r.drain.split(' ')[0]!;
    const stalled = r.stalled.length ? r.stalled.join(',') : '-';
    return `${pad(r.table + (r.paused ? ' (paused)' : ''), 24)}${pad(String(r.backlog), 9)}${pad(r.writePressure.toFixed(2), 9)}${pad(r.turn ?? 'free', 20)}${pad(wait, 26)}${pad(eta, 12)}${pad(r.writeAmplification === null ? '-' : r.writeAmplification.toFixed(1), 7)}${stalled}`;
  });
  const unanswered = silent.map((x) => `${pad(x.table, 24)}(${x.error}: no worker polling its task queue?)`);
  return [head, '', cols, ...lines, ...unanswered].join('\n');
}
