import { setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import { backlogOf, formatDrain, headroomLine, justGrantedBrief, statusView, type DrainEstimate } from '../src/policy';
import type { TableState } from '../src/policy/types';
import * as sa from './search-attributes';

// What the Temporal UI shows of a table: search attributes (durable, filterable) upserted
// only when they change, and a short markdown summary as the workflow's current details.

// Every upsert is a history event and a write of the visibility store. Turn holder,
// stalled, paused, backlog reaching or leaving 0, and any change of the write pressure
// are published at once; the backlog moving within non-zero values while the pressure
// stays (0, at or below softBacklog) at most once a second (the next event or the
// periodic snapshot brings it up to date). Writers read the pressure from here (describe,
// src/client/table-writer.ts), so it must not wait for a next event that may not come
// (merges paused, say); it only moves while the table is behind its writers.
// A turn expected to be brief (a direct merge, or maintenance whose last commit took
// under a second: src/policy/brief-turn.ts) is not published when it is granted: it is
// over before a list could show it, and publishing it and its end were two history
// events per turn. If a later activation still sees it holding the turn, that one
// publishes it.
const NUMBERS_EVERY_MS = 1000;

/** One publisher per workflow run: it remembers what it last upserted and when. */
export function createUiPublisher(): (st: TableState, stalled: boolean, nowMs: number, drain: DrainEstimate) => void {
  let last: Published | null = null;
  let lastAtMs = 0;
  return (st, stalled, nowMs, drain) => {
    const next = published(st, stalled);
    const changed = JSON.stringify(next) !== JSON.stringify(last);
    const urgent = last === null || categorical(next) !== categorical(last);
    const brief = last !== null && justGrantedBrief(st, nowMs);
    if (changed && !brief && (urgent || nowMs - lastAtMs >= NUMBERS_EVERY_MS)) {
      upsert(next);
      last = next;
      lastAtMs = nowMs;
    }
    setCurrentDetails(detailsMarkdown(st, nowMs, drain));
  };
}

type Published = ReturnType<typeof published>;

function published(st: TableState, stalled: boolean) {
  return {
    table: st.table,
    turn: st.turn?.unitId ?? '',
    backlog: backlogOf(st),
    pressure: Math.round(st.writePressure * 1000) / 1000,
    stalled,
    paused: st.paused || st.pausedKinds.length > 0,
  };
}

const categorical = (p: Published): string => JSON.stringify([p.table, p.turn, p.stalled, p.paused, p.backlog === 0, p.pressure]);

function upsert(values: Published): void {
  upsertSearchAttributes([
    { key: sa.TurnstileTable, value: values.table },
    { key: sa.TurnstileTurnHolder, value: values.turn || null },
    { key: sa.TurnstileBacklog, value: values.backlog },
    { key: sa.TurnstileWritePressure, value: values.pressure },
    { key: sa.TurnstileStalled, value: values.stalled },
    { key: sa.TurnstilePaused, value: values.paused },
  ]);
}

function detailsMarkdown(st: TableState, nowMs: number, drain: DrainEstimate): string {
  const v = statusView(st, nowMs);
  const lines = [
    `**${v.table}** version ${v.version} · backlog ${v.backlog} · writePressure ${v.writePressure.toFixed(2)}${v.paused ? ' · **paused**' : ''}${v.pausedKinds.length ? ` · paused kinds: ${v.pausedKinds.join(', ')}` : ''}`,
    '',
    v.turn ? `**turn:** ${v.turn.unitId} for ${v.turn.sinceSecs} s (${v.turn.why})` : '**turn:** free',
    '',
    `**drain ETA:** ${formatDrain(drain)}`,
  ];
  if (st.adopted) {
    const o = st.adopted.observed;
    const mode = st.adopted.mode === 'shadow' ? '**shadow** (decides and records, commits nothing)' : '**active**';
    lines.push('', `**adopted** ${st.adopted.uri} · ${mode}${o ? ` · ${o.fragments} fragments (${o.smallFragments} small), ${o.unindexedRows} unindexed rows` : ''} · conflicts ${st.counters.commitConflicts ?? 0}`);
  }
  // A commit no worker had the memory for waits without the turn; say so first.
  const waiting = st.units.filter((u) => u.state === 'backoff' && u.waitingForBytes !== undefined);
  if (waiting.length) lines.push('', ...waiting.map((u) => `**${u.id}:** ${headroomLine(u.waitingForBytes!)} (the turn is free meanwhile)`));
  if (v.preparing.length) lines.push('', `**preparing:** ${v.preparing.map((p) => p.unitId).join(', ')} (progress: pending activities)`);
  if (v.queue.length) lines.push('', '**queue:**', ...v.queue.slice(0, 10).map((q) => `- ${q.unitId} class ${q.class}, ${q.waitedSecs} s: ${q.reason}`));
  return lines.join('\n');
}
