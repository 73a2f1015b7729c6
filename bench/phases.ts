import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { CommitResult, PreparedMerge } from '../activities/contract';
import { activityRunsOf, ms, type ActivityRun, type History } from '../test/support/history';
import type { Demand } from '../src/messages/payload-schemas';

// Where a table's time went, from its workflow history alone (plus the seal times the
// writer measured): every number below is an interval between two recorded events or a
// timing an activity put in its result, so it can be checked against the Temporal UI.

const E = temporal.api.enums.v1.EventType;

export interface Stat {
  n: number;
  p50: number;
  p99: number;
  sum: number;
}

export function stat(values: number[]): Stat {
  const v = [...values].sort((a, b) => a - b);
  const at = (q: number) => (v.length ? (v[Math.min(v.length - 1, Math.ceil(q * v.length) - 1)] as number) : NaN);
  return { n: v.length, p50: at(0.5), p99: at(0.99), sum: v.reduce((a, b) => a + b, 0) };
}

export interface Phases {
  sealMs: Stat;
  demandToPrepareStartMs: Stat;
  prepareReadMs: Stat;
  prepareDedupeMs: Stat;
  prepareEncodeMs: Stat;
  /** The whole prepareMerge activity, start to close. */
  prepareActivityMs: Stat;
  commitLanceMs: Stat;
  commitEncodeMs: Stat;
  commitReadMs: Stat;
  commitOpenMs: Stat;
  commitScanMs: Stat;
  /** The whole commitMerge activity, start to close (Lance call + reading the batch + opening the table). */
  commitActivityMs: Stat;
  /** Activity task scheduled -> started (matching, or eager dispatch). */
  activityQueueMs: Stat;
  workflowTaskQueueMs: Stat;
  workflowTaskRunMs: Stat;
  /** Commit done -> next commit started, when the next unit was already prepared. */
  handoffMs: Stat;
  turns: number;
  workflowTasks: number;
  historyEvents: number;
  /** History events by type (EVENT_TYPE_ dropped), most frequent first: what the server stored per turn. */
  eventsByType: [string, number][];
  signals: number;
}

const unitOf = (r: ActivityRun): string => r.activityId.replace(/^(prepare|commit) /, '');

function demandsOf(e: temporal.api.history.v1.IHistoryEvent): Demand[] {
  const a = e.workflowExecutionSignaledEventAttributes;
  const p = a?.input?.payloads?.[0];
  if (!p) return [];
  const v: unknown = defaultPayloadConverter.fromPayload(p);
  if (a?.signalName === 'demands') return v as Demand[];
  if (a?.signalName === 'demand') return [v as Demand];
  return [];
}

/** Workflow task scheduled -> started (queue) and started -> completed (run), ms; and the timed-out tasks by timeout type. */
export function workflowTaskLatencies(events: temporal.api.history.v1.IHistoryEvent[]): { wftQueue: number[]; wftRun: number[]; timeouts: Record<string, number> } {
  const wftScheduled = new Map<number, number>();
  const wftStarted = new Map<number, number>();
  const wftQueue: number[] = [];
  const wftRun: number[] = [];
  const timeouts: Record<string, number> = {};
  for (const e of events) {
    const at = ms(e.eventTime);
    if (e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED) wftScheduled.set(Number(e.eventId), at);
    if (e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_STARTED) {
      const s = wftScheduled.get(Number(e.workflowTaskStartedEventAttributes?.scheduledEventId));
      if (s !== undefined) wftQueue.push(at - s);
      wftStarted.set(Number(e.eventId), at);
    }
    if (e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) {
      const s = wftStarted.get(Number(e.workflowTaskCompletedEventAttributes?.startedEventId));
      if (s !== undefined) wftRun.push(at - s);
    }
    if (e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT) {
      const t = temporal.api.enums.v1.TimeoutType[e.workflowTaskTimedOutEventAttributes?.timeoutType ?? 0] ?? 'unknown';
      timeouts[t] = (timeouts[t] ?? 0) + 1;
    }
  }
  return { wftQueue, wftRun, timeouts };
}

export function phasesOf(history: History, sealMs: number[]): Phases {
  const events = history.events ?? [];
  const runs = activityRunsOf(history);
  const prepares = runs.filter((r) => r.type === 'prepareMerge' && r.outcome === 'completed');
  const commits = runs.filter((r) => r.type === 'commitMerge' && r.outcome === 'completed');

  // Demand -> the start of the preparation whose range first covers it.
  const demandToPrep: number[] = [];
  for (const e of events) {
    if (e.eventType !== E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED) continue;
    const at = ms(e.eventTime);
    for (const d of demandsOf(e)) {
      const p = prepares.find((r) => {
        const res = r.result as PreparedMerge;
        return res.shard === d.shard && res.toSeq >= d.sealedThroughSeq && r.startedAtMs !== null;
      });
      if (p?.startedAtMs != null) demandToPrep.push(Math.max(0, p.startedAtMs - at));
    }
  }

  const preparedAt = new Map(prepares.map((r) => [unitOf(r), r.closedAtMs ?? Infinity]));
  const handoff: number[] = [];
  for (let i = 1; i < commits.length; i++) {
    const prev = commits[i - 1] as ActivityRun;
    const next = commits[i] as ActivityRun;
    if (prev.closedAtMs === null || next.startedAtMs === null) continue;
    if ((preparedAt.get(unitOf(next)) ?? Infinity) <= prev.closedAtMs) handoff.push(next.startedAtMs - prev.closedAtMs);
  }

  const { wftQueue, wftRun } = workflowTaskLatencies(events);

  const timings = prepares.map((r) => (r.result as PreparedMerge).timings).filter((t) => t !== undefined);
  const commitSteps = commits.map((r) => (r.result as CommitResult).steps).filter((x) => x !== undefined);
  const span = (r: ActivityRun) => (r.closedAtMs ?? 0) - (r.startedAtMs ?? 0);
  return {
    sealMs: stat(sealMs),
    demandToPrepareStartMs: stat(demandToPrep),
    prepareReadMs: stat(timings.map((t) => t.readMs)),
    prepareDedupeMs: stat(timings.map((t) => t.dedupeMs)),
    prepareEncodeMs: stat(timings.map((t) => t.encodeMs)),
    prepareActivityMs: stat(prepares.map(span)),
    commitLanceMs: stat(commits.map((r) => (r.result as CommitResult).lanceMs ?? NaN).filter((x) => !Number.isNaN(x))),
    commitEncodeMs: stat(commitSteps.map((x) => x.encodeMs)),
    commitReadMs: stat(commitSteps.map((x) => x.readMs)),
    commitOpenMs: stat(commitSteps.map((x) => x.openMs)),
    commitScanMs: stat(commitSteps.map((x) => x.scanMs)),
    commitActivityMs: stat(commits.map(span)),
    activityQueueMs: stat(runs.filter((r) => r.startedAtMs !== null).map((r) => (r.startedAtMs as number) - r.scheduledAtMs)),
    workflowTaskQueueMs: stat(wftQueue),
    workflowTaskRunMs: stat(wftRun),
    handoffMs: stat(handoff),
    turns: commits.length,
    workflowTasks: wftRun.length,
    historyEvents: events.length,
    eventsByType: countByType(events),
    signals: events.filter((e) => e.eventType === E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED).length,
  };
}

function countByType(events: temporal.api.history.v1.IHistoryEvent[]): [string, number][] {
  const n = new Map<string, number>();
  for (const e of events) {
    const name = (E[e.eventType ?? 0] ?? 'unknown').replace(/^EVENT_TYPE_/, '').toLowerCase();
    n.set(name, (n.get(name) ?? 0) + 1);
  }
  return [...n].sort((a, b) => b[1] - a[1]);
}

const f = (x: number) => (Number.isNaN(x) ? '-' : x >= 100 ? x.toFixed(0) : x.toFixed(1));

/** One line per phase: count, p50, p99 and total, in ms. */
export function formatPhases(p: Phases): string[] {
  const rows: [string, Stat][] = [
    ['seal (per generation, writer side)', p.sealMs],
    ['demand signal -> preparation started', p.demandToPrepareStartMs],
    ['preparation: read (per unit)', p.prepareReadMs],
    ['preparation: dedupe (per unit)', p.prepareDedupeMs],
    ['preparation: gather + encode + write (per unit)', p.prepareEncodeMs],
    ['preparation activity (start -> close)', p.prepareActivityMs],
    ['commit: read batches', p.commitReadMs],
    ['commit: open Lance table', p.commitOpenMs],
    ['commit: Lance mergeInsert (with encode)', p.commitLanceMs],
    ['commit: encode for Lance', p.commitEncodeMs],
    ['commit: scan shards after', p.commitScanMs],
    ['commit activity (start -> close)', p.commitActivityMs],
    ['activity task scheduled -> started', p.activityQueueMs],
    ['workflow task scheduled -> started', p.workflowTaskQueueMs],
    ['workflow task started -> completed', p.workflowTaskRunMs],
    ['turn handoff (commit done -> next commit started)', p.handoffMs],
  ];
  const w = Math.max(...rows.map(([n]) => n.length));
  const lines = [`${'phase (ms)'.padEnd(w)}  ${'n'.padStart(5)}  ${'p50'.padStart(7)}  ${'p99'.padStart(7)}  ${'total'.padStart(8)}`];
  for (const [name, s] of rows) lines.push(`${name.padEnd(w)}  ${String(s.n).padStart(5)}  ${f(s.p50).padStart(7)}  ${f(s.p99).padStart(7)}  ${f(s.sum).padStart(8)}`);
  lines.push(`turns ${p.turns}, workflow tasks ${p.workflowTasks}, history events ${p.historyEvents}, demand signals ${p.signals}`);
  lines.push(`events by type: ${p.eventsByType.map(([t, n]) => `${t} ${n}`).join(', ')}`);
  return lines;
}

/** What a merge activity reported of its own steps (ms), for the timeline. */
function detail(result: unknown): string {
  const r = (result ?? {}) as { rows?: number; timings?: Record<string, number>; lanceMs?: number; steps?: Record<string, number> };
  const parts = Object.entries({ ...r.timings, ...(r.lanceMs !== undefined ? { lanceMs: r.lanceMs } : {}), ...r.steps }).map(([k, v]) => `${k.replace(/Ms$/, '')} ${v}`);
  return parts.length ? `  (${r.rows ?? '?'} rows: ${parts.join(', ')})` : '';
}

/**
 * Every activity of the run on one clock (ms after `t0EpochMs`, the first seal), with
 * the writers' seal completions per shard: where the critical path waited.
 */
export function formatTimeline(history: History, t0EpochMs: number, sealedAt: { shard: string; seq: number; atMs: number }[]): string[] {
  const rel = (x: number | null) => (x === null ? '     -' : String(Math.round(x - t0EpochMs)).padStart(6));
  const lines = activityRunsOf(history).map(
    (r) => ({ at: r.scheduledAtMs, text: `${rel(r.decidedAtMs)} decided ${rel(r.scheduledAtMs)} scheduled ${rel(r.startedAtMs)} started ${rel(r.closedAtMs)} closed  ${r.activityId}${detail(r.result)}` }),
  );
  for (const s of sealedAt) lines.push({ at: t0EpochMs + s.atMs, text: `${String(Math.round(s.atMs)).padStart(6)} sealed ${s.shard} seq ${s.seq}` });
  // Every workflow task, so a wait between an activity's close and the next decision shows what it waited for.
  const started = new Map<number, number>();
  for (const e of history.events ?? []) {
    if (e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_STARTED) started.set(Number(e.eventId), ms(e.eventTime));
    if (e.eventType !== E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) continue;
    const at = started.get(Number(e.workflowTaskCompletedEventAttributes?.startedEventId));
    if (at !== undefined) lines.push({ at, text: `${rel(at)} workflow task started, completed ${rel(ms(e.eventTime))} (${Math.round(ms(e.eventTime) - at)} ms)` });
  }
  return lines.sort((a, b) => a.at - b.at).map((l) => l.text);
}
