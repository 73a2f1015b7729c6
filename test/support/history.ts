import type { Client, WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { optionalTsToMs, type Timestamp } from '@temporalio/common/lib/time';
import { AWAIT_MERGED_BOUND_SECS } from '../../workflows/table';

const E = temporal.api.enums.v1.EventType;

export interface ActivityRun {
  type: string;
  activityId: string;
  /** Identity of the worker whose attempt closed it (the last attempt's). */
  startedBy: string | null;
  /** How the attempt before the last one ended, when there was one: 'timeout' or 'failure'. */
  previousAttempt: 'timeout' | 'failure' | null;
  scheduledAtMs: number;
  /** The task queue priority it was scheduled with (1 highest; 0 = none given, i.e. the default 3). */
  priorityKey: number;
  /** When the last attempt started (its ActivityTaskStarted event), null if it never did. */
  startedAtMs: number | null;
  closedAtMs: number | null;
  /** Workflow time of the task that scheduled it: when the core granted the turn. */
  decidedAtMs: number;
  /** Workflow time of the first task that saw it close: when the core released the turn. */
  seenClosedAtMs: number | null;
  scheduledEventId: number;
  closedEventId: number | null;
  outcome: 'completed' | 'failed' | 'timedOut' | 'canceled' | null;
  /** The decoded result, when it completed. */
  result?: unknown;
  /** The failure's message (its cause's, when it has one), when it failed. */
  failure?: string;
  /** The application failure's type (its cause's), e.g. 'CommitConflict', when it failed with one. */
  failureType?: string;
}

export const ms = (t: Timestamp | null | undefined): number => optionalTsToMs(t) ?? 0;

/** The events of the latest run (not the chain: ids there are the run's own) whose type is `EVENT_TYPE_<type>`, e.g. 'TIMER_STARTED'. */
export async function historyEvents(handle: WorkflowHandle, type: keyof typeof E extends `EVENT_TYPE_${infer T}` ? T : never): Promise<temporal.api.history.v1.IHistoryEvent[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).filter((e) => e.eventType === E[`EVENT_TYPE_${type}`]);
}

/**
 * Every activity of the workflow's whole continue-as-new chain in scheduling order, with
 * when it closed and how. Under load a run continues as new every few hundred events, so
 * reading only the latest run loses what a test looks for (CI lost a planOptimize that
 * way). Event ids are numbered across the chain (a later run's ids come after every id of
 * the runs before it), so comparisons of ids keep meaning "happened before".
 */
export async function activityRuns(handle: WorkflowHandle): Promise<ActivityRun[]> {
  let offset = 0;
  const runs: ActivityRun[] = [];
  for (const history of await chainHistories(handle.client, handle.workflowId)) {
    runs.push(...activityRunsOf(history, offset));
    offset += history.events?.length ?? 0;
  }
  return runs;
}

export type History = Awaited<ReturnType<WorkflowHandle['fetchHistory']>>;

/** activityRuns of one history already fetched; `offset` is added to its event ids. */
export function activityRunsOf(history: History, offset = 0): ActivityRun[] {
  const byId = new Map<number, ActivityRun>();
  const runs: ActivityRun[] = [];
  // Workflow code reads the clock of the workflow task it runs in (its started time).
  let taskStartedAtMs = 0;
  let closedUnseen: ActivityRun[] = [];
  for (const e of history.events ?? []) {
    const id = Number(e.eventId) + offset;
    const at = ms(e.eventTime);
    if (e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_STARTED) {
      taskStartedAtMs = at;
      for (const r of closedUnseen) r.seenClosedAtMs = at;
      closedUnseen = [];
      continue;
    }
    if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) {
      const r: ActivityRun = {
        type: e.activityTaskScheduledEventAttributes!.activityType!.name!,
        activityId: e.activityTaskScheduledEventAttributes!.activityId ?? '',
        startedBy: null,
        previousAttempt: null,
        scheduledAtMs: at,
        priorityKey: e.activityTaskScheduledEventAttributes!.priority?.priorityKey ?? 0,
        startedAtMs: null,
        closedAtMs: null,
        decidedAtMs: taskStartedAtMs,
        seenClosedAtMs: null,
        scheduledEventId: id,
        closedEventId: null,
        outcome: null,
      };
      byId.set(id, r);
      runs.push(r);
      continue;
    }
    const started = e.activityTaskStartedEventAttributes;
    if (started) {
      const r = byId.get(Number(started.scheduledEventId) + offset);
      if (r) {
        r.startedBy = started.identity ?? null;
        r.startedAtMs = at;
        const lf = started.lastFailure;
        r.previousAttempt = lf ? (lf.timeoutFailureInfo ? 'timeout' : 'failure') : null;
      }
      continue;
    }
    const close: [ActivityRun['outcome'], { scheduledEventId?: unknown } | null | undefined][] = [
      ['completed', e.activityTaskCompletedEventAttributes],
      ['failed', e.activityTaskFailedEventAttributes],
      ['timedOut', e.activityTaskTimedOutEventAttributes],
      ['canceled', e.activityTaskCanceledEventAttributes],
    ];
    for (const [outcome, attrs] of close) {
      if (!attrs) continue;
      const r = byId.get(Number(attrs.scheduledEventId) + offset);
      if (!r) continue;
      Object.assign(r, { closedAtMs: at, closedEventId: id, outcome });
      const payload = e.activityTaskCompletedEventAttributes?.result?.payloads?.[0];
      if (payload) r.result = defaultPayloadConverter.fromPayload(payload);
      const failure = e.activityTaskFailedEventAttributes?.failure;
      if (failure) {
        r.failure = (failure.cause?.message || failure.message) ?? undefined;
        r.failureType = (failure.cause?.applicationFailureInfo?.type || failure.applicationFailureInfo?.type) ?? undefined;
      }
      closedUnseen.push(r);
    }
  }
  return runs;
}

/** Every run of a workflow's continue-as-new chain, oldest first, walked back from the latest. */
export async function chainHistories(client: Client | WorkflowHandle['client'], workflowId: string): Promise<History[]> {
  const workflows = 'workflow' in client ? client.workflow : client;
  const histories: History[] = [];
  for (let runId: string | undefined = (await workflows.getHandle(workflowId).describe()).runId; runId; ) {
    const h = await workflows.getHandle(workflowId, runId).fetchHistory();
    histories.unshift(h);
    runId = h.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
  }
  return histories;
}

export const COMMIT_ACTIVITIES = ['commitMerge', 'commitOptimize', 'ensureIndex', 'gc'];
export const isCommit = (r: ActivityRun): boolean => COMMIT_ACTIVITIES.includes(r.type);

/**
 * Longest turn as the workflow holds it: from the workflow task that granted it to
 * the one that saw its commit close. Measuring from the activity's own events instead
 * leaves out the workflow-task latency on both ends, which the waits (taken on the
 * workflow clock) do include.
 */
export function longestTurnMs(runs: ActivityRun[]): number {
  return Math.max(0, ...runs.filter(isCommit).map((r) => (r.seenClosedAtMs ?? r.decidedAtMs) - r.decidedAtMs));
}

/**
 * How long each continue-as-new of a chain kept the turn free: from the moment a run saw
 * its last commit close to the first workflow task of the run after it (where the next
 * turn can be granted). Under load it includes a refused continue-as-new's retry and a
 * replay of the old run; a wait for the turn spanning it is longer by that much. With
 * what happened in it: the events of both runs in the gap, by type, in seconds from its
 * start, with the task queue of a scheduled workflow task (a sticky queue's name ends in
 * a hex id).
 */
export function continueAsNewGaps(chain: History[]): { ms: number; events: string[] }[] {
  const gaps: { ms: number; events: string[] }[] = [];
  for (let i = 0; i + 1 < chain.length; i++) {
    const lastCommit = activityRunsOf(chain[i]!).filter(isCommit).at(-1);
    const next = chain[i + 1]!.events ?? [];
    const firstTask = next.find((e) => e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_STARTED);
    if (!lastCommit?.seenClosedAtMs || !firstTask) continue;
    const from = lastCommit.seenClosedAtMs;
    const until = ms(firstTask.eventTime);
    const line = (e: temporal.api.history.v1.IHistoryEvent) =>
      `${((ms(e.eventTime) - from) / 1000).toFixed(2)} ${E[e.eventType!]?.replace('EVENT_TYPE_', '')}${e.workflowTaskScheduledEventAttributes?.taskQueue?.name ? ` on ${e.workflowTaskScheduledEventAttributes.taskQueue.name}` : ''}` +
      `${e.workflowTaskTimedOutEventAttributes ? ` (${temporal.api.enums.v1.TimeoutType[e.workflowTaskTimedOutEventAttributes.timeoutType ?? 0]})` : ''}` +
      `${e.workflowTaskFailedEventAttributes ? ` (${temporal.api.enums.v1.WorkflowTaskFailedCause[e.workflowTaskFailedEventAttributes.cause ?? 0]})` : ''}`;
    const inGap = [...(chain[i]!.events ?? []), ...next].filter((e) => ms(e.eventTime) >= from && ms(e.eventTime) <= until);
    gaps.push({ ms: until - from, events: inGap.map(line) });
  }
  return gaps;
}

/** The UI summaries of the commit activities, in scheduling order. */
export async function commitSummaries(handle: WorkflowHandle): Promise<string[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? [])
    .filter((e) => e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED && COMMIT_ACTIVITIES.includes(e.activityTaskScheduledEventAttributes!.activityType!.name!))
    .map((e) => {
      const data = e.userMetadata?.summary?.data;
      return data ? (JSON.parse(Buffer.from(data).toString('utf8')) as string) : '';
    });
}

/** The UI summary of every timer the workflow's latest run started, in order ('' for a timer without one). */
export async function timerSummaries(handle: WorkflowHandle): Promise<string[]> {
  return (await historyEvents(handle, 'TIMER_STARTED')).map((e) => {
    const data = e.userMetadata?.summary?.data;
    return data ? (JSON.parse(Buffer.from(data).toString('utf8')) as string) : '';
  });
}

/**
 * Every alarm timer the workflow started, in order: when (server time) and for how long.
 * The bound of an awaitMerged that had to wait (AWAIT_MERGED_BOUND_SECS) is not the alarm.
 */
export async function timersStarted(handle: WorkflowHandle): Promise<{ atMs: number; secs: number }[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? [])
    .filter((e) => e.eventType === E.EVENT_TYPE_TIMER_STARTED)
    .map((e) => ({ atMs: ms(e.eventTime), secs: ms(e.timerStartedEventAttributes!.startToFireTimeout) / 1000 }))
    .filter((t) => t.secs !== AWAIT_MERGED_BOUND_SECS);
}
