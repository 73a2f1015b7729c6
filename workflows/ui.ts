import { setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import { backlogOf, statusView } from '../src/policy';
import type { TableState } from '../src/policy/types';
import * as sa from './search-attributes';

// What the Temporal UI shows of a table: search attributes (durable, filterable) upserted
// only when they change, and a short markdown summary as the workflow's current details.

/** One publisher per workflow run: it remembers what it last upserted. */
export function createUiPublisher(): (st: TableState, stalled: boolean, nowMs: number) => void {
  let last = '';
  return (st, stalled, nowMs) => {
    last = publish(st, stalled, nowMs, last);
  };
}

function publish(st: TableState, stalled: boolean, nowMs: number, last: string): string {
  const values = {
    table: st.table,
    turn: st.turn?.unitId ?? '',
    backlog: backlogOf(st),
    pressure: Math.round(st.writePressure * 1000) / 1000,
    stalled,
    paused: st.paused || st.pausedKinds.length > 0,
  };
  const key = JSON.stringify(values);
  if (key !== last) {
    upsertSearchAttributes([
      { key: sa.TurnstileTable, value: values.table },
      { key: sa.TurnstileTurnHolder, value: values.turn || null },
      { key: sa.TurnstileBacklog, value: values.backlog },
      { key: sa.TurnstileWritePressure, value: values.pressure },
      { key: sa.TurnstileStalled, value: values.stalled },
      { key: sa.TurnstilePaused, value: values.paused },
    ]);
  }
  setCurrentDetails(detailsMarkdown(st, nowMs));
  return key;
}

function detailsMarkdown(st: TableState, nowMs: number): string {
  const v = statusView(st, nowMs);
  const lines = [
    `**${v.table}** version ${v.version} · backlog ${v.backlog} · writePressure ${v.writePressure.toFixed(2)}${v.paused ? ' · **paused**' : ''}${v.pausedKinds.length ? ` · paused kinds: ${v.pausedKinds.join(', ')}` : ''}`,
    '',
    v.turn ? `**turn:** ${v.turn.unitId} for ${v.turn.sinceSecs} s (${v.turn.why})` : '**turn:** free',
  ];
  if (v.preparing.length) lines.push('', `**preparing:** ${v.preparing.map((p) => `${p.unitId} (${p.phase ?? 'starting'})`).join(', ')}`);
  if (v.queue.length) lines.push('', '**queue:**', ...v.queue.slice(0, 10).map((q) => `- ${q.unitId} class ${q.class}, ${q.waitedSecs} s: ${q.reason}`));
  return lines.join('\n');
}
