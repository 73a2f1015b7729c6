import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { connectClient } from '../src/client/connect';
import { TableClient } from '../src/client/table-client';
import { workflowArgsFor } from '../src/client/table-writer';
import type { PolicyOverride } from '../src/config/policy-schema';
import { shardNames, workflowIdForTable } from '../src/messages/names';
import { createTableMeta } from '../src/storage/generation-store';
import { createWorker } from '../src/worker/create-worker';

// What idle tables cost the Temporal server, measured from their real histories: N
// tables per mode, created at once, nobody writes to them; after the run every
// workflow's history is fetched and its events up to the end of the run are counted.
// Numbers are per table-hour of the tables' lives, creation included (a conservative
// figure for short runs: creation costs a workflow task or two that a long-idle table
// no longer pays).

const E = temporal.api.enums.v1.EventType;

export interface Mode {
  name: string;
  /** What it stands for, printed with the results. */
  label: string;
  policy: PolicyOverride;
}

export const MODES: readonly Mode[] = [
  // What every table cost before the idle-cost rules: a scan every 60 s, optimize, index
  // and gc prepared every period whether or not anything changed.
  { name: 'before', label: 'fixed 60 s scan, periodic kinds always due', policy: { snapshotMaxIntervalSecs: 60, periodicWhenIdle: true } },
  { name: 'after', label: 'defaults', policy: {} },
];

export interface ModeReport {
  mode: string;
  label: string;
  tables: number;
  /** Sum over tables of their lifetime within the run. */
  tableHours: number;
  events: number;
  workflowTasks: number;
  timers: number;
  /** Activities scheduled, by type. */
  activities: Record<string, number>;
  perTableHour: { events: number; workflowTasks: number };
  /**
   * The same, counting only what came after the task that took in the table's first
   * scan: what a table costs once created, while nobody writes.
   */
  idle: { tableHours: number; events: number; workflowTasks: number; perTableHour: { events: number; workflowTasks: number } };
  /** Per table: its workflow id and the history events counted (for cross-checks). */
  workflowIds: string[];
  eventsPerTable: number[];
}

export interface IdleCostReport {
  seconds: number;
  /** Events up to this time (ms since the epoch, server clock = this machine's) are counted. */
  endMs: number;
  tablesPerMode: number;
  modes: ModeReport[];
}

interface Counted {
  startedAtMs: number;
  events: number;
  workflowTasks: number;
  timers: number;
  activities: Record<string, number>;
  /** When the task that took in the first scan completed (null: not yet). */
  idleFromMs: number | null;
  idleEvents: number;
  idleWorkflowTasks: number;
}

const ms = (t: { seconds?: unknown; nanos?: number | null } | null | undefined): number =>
  t ? Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6) : 0;

/** One workflow's history events up to `untilMs`. */
async function countHistory(client: Client, workflowId: string, untilMs: number): Promise<Counted> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const events = (history.events ?? []).filter((e) => ms(e.eventTime) <= untilMs);
  const c: Counted = { startedAtMs: ms(events[0]?.eventTime), events: events.length, workflowTasks: 0, timers: 0, activities: {}, idleFromMs: null, idleEvents: 0, idleWorkflowTasks: 0 };
  let scanDone = false;
  // The commands of the task that took in the first scan (its timer, search attributes)
  // are recorded after it completed; idle cost starts with the first timer firing.
  let woken = false;
  for (const e of events) {
    if (c.idleFromMs !== null && e.eventType === E.EVENT_TYPE_TIMER_FIRED) woken = true;
    if (woken) {
      c.idleEvents++;
      if (e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_STARTED) c.idleWorkflowTasks++;
    }
    if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) scanDone = true;
    if (scanDone && c.idleFromMs === null && e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) c.idleFromMs = ms(e.eventTime);
    if (e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_STARTED) c.workflowTasks++;
    else if (e.eventType === E.EVENT_TYPE_TIMER_STARTED) c.timers++;
    else if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) {
      const type = e.activityTaskScheduledEventAttributes!.activityType!.name!;
      c.activities[type] = (c.activities[type] ?? 0) + 1;
    }
  }
  return c;
}

function summarize(mode: Mode, ids: string[], counted: Counted[], endMs: number): ModeReport {
  const tableHours = counted.reduce((sum, c) => sum + Math.max(0, endMs - c.startedAtMs), 0) / 3_600_000;
  const sum = (f: (c: Counted) => number) => counted.reduce((s, c) => s + f(c), 0);
  const activities: Record<string, number> = {};
  for (const c of counted) for (const [k, n] of Object.entries(c.activities)) activities[k] = (activities[k] ?? 0) + n;
  const events = sum((c) => c.events);
  const workflowTasks = sum((c) => c.workflowTasks);
  const idleHours = counted.reduce((s, c) => s + (c.idleFromMs === null ? 0 : Math.max(0, endMs - c.idleFromMs)), 0) / 3_600_000;
  const idleEvents = sum((c) => c.idleEvents);
  const idleTasks = sum((c) => c.idleWorkflowTasks);
  return {
    mode: mode.name,
    label: mode.label,
    tables: counted.length,
    tableHours,
    events,
    workflowTasks,
    timers: sum((c) => c.timers),
    activities,
    perTableHour: { events: events / tableHours, workflowTasks: workflowTasks / tableHours },
    idle: { tableHours: idleHours, events: idleEvents, workflowTasks: idleTasks, perTableHour: { events: idleEvents / idleHours, workflowTasks: idleTasks / idleHours } },
    workflowIds: ids,
    eventsPerTable: counted.map((c) => c.events),
  };
}

export interface MeasureOptions {
  address: string;
  namespace?: string;
  dataRoot: string;
  taskQueue: string;
  tablesPerMode: number;
  seconds: number;
  modes?: readonly Mode[];
  log?: (line: string) => void;
}

/** Runs one worker, creates the tables of every mode, waits, and counts their histories. */
export async function measureIdleCost(opts: MeasureOptions): Promise<IdleCostReport> {
  const namespace = opts.namespace ?? 'default';
  const modes = opts.modes ?? MODES;
  const log = opts.log ?? (() => undefined);
  const client = await connectClient({ address: opts.address, namespace });
  const { worker, connection } = await createWorker({ address: opts.address, namespace, taskQueue: opts.taskQueue, deps: { dataRoot: opts.dataRoot }, shutdownGraceSecs: 2 });
  const running = worker.run();
  const ids = new Map<string, string[]>(modes.map((m) => [m.name, []]));
  try {
    const tables = new TableClient(client, opts.taskQueue);
    // Interleaved, so both modes see the same server load at the same time.
    for (let i = 0; i < opts.tablesPerMode; i++) {
      for (const m of modes) {
        const meta = await createTableMeta(opts.dataRoot, { name: `idle-${m.name}-${i}-${process.pid}`, key: 'id', shards: shardNames(2), indices: [] });
        await tables.start({ ...workflowArgsFor(meta), policy: m.policy });
        ids.get(m.name)!.push(workflowIdForTable(meta.name));
      }
    }
    log(`${opts.tablesPerMode} tables per mode started; idle for ${opts.seconds} s`);
    await new Promise((r) => setTimeout(r, opts.seconds * 1000));
    const endMs = Date.now();
    // Ended before counting: a workflow task started before endMs but completed after the
    // history was fetched would otherwise show up only later (a count off by one, seen in CI).
    await Promise.all([...ids.values()].flat().map((id) => client.workflow.getHandle(id).terminate('idle-cost benchmark done').catch(() => undefined)));
    const reports: ModeReport[] = [];
    for (const m of modes) {
      const counted: Counted[] = [];
      for (const id of ids.get(m.name)!) counted.push(await countHistory(client, id, endMs));
      reports.push(summarize(m, ids.get(m.name)!, counted, endMs));
    }
    return { seconds: opts.seconds, endMs, tablesPerMode: opts.tablesPerMode, modes: reports };
  } finally {
    // On a server the bench did not start, the workflows would otherwise run on forever.
    for (const id of [...ids.values()].flat()) await client.workflow.getHandle(id).terminate('idle-cost benchmark done').catch(() => undefined);
    worker.shutdown();
    await running.catch((e: unknown) => log(`worker: ${String(e)}`));
    await connection.close();
    await client.connection.close();
  }
}

/** The side-by-side table the bench prints. */
export function formatReport(r: IdleCostReport): string {
  const [a, b] = r.modes;
  if (!a || !b) return JSON.stringify(r);
  const f = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : String(n));
  const per = (m: ModeReport, n: number) => f(n / m.tableHours);
  const kinds = [...new Set([...Object.keys(a.activities), ...Object.keys(b.activities)])].sort();
  const rows: [string, string, string, string][] = [
    ['per table-hour', a.mode, b.mode, `${a.mode} / ${b.mode}`],
    ['history events', f(a.perTableHour.events), f(b.perTableHour.events), `${f(a.perTableHour.events / b.perTableHour.events)}x`],
    ['workflow tasks', f(a.perTableHour.workflowTasks), f(b.perTableHour.workflowTasks), `${f(a.perTableHour.workflowTasks / b.perTableHour.workflowTasks)}x`],
    ['history events, after creation', f(a.idle.perTableHour.events), f(b.idle.perTableHour.events), ''],
    ['workflow tasks, after creation', f(a.idle.perTableHour.workflowTasks), f(b.idle.perTableHour.workflowTasks), ''],
    ['timers started', per(a, a.timers), per(b, b.timers), ''],
    ...kinds.map((k): [string, string, string, string] => [`activity ${k}`, per(a, a.activities[k] ?? 0), per(b, b.activities[k] ?? 0), '']),
  ];
  const w = [0, 1, 2, 3].map((i) => Math.max(...rows.map((row) => row[i]!.length)));
  const lines = rows.map((row) => row.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  '));
  return [
    ...lines,
    '',
    `${a.mode}: ${a.label}; ${b.mode}: ${b.label}`,
    `${a.tables} + ${b.tables} tables, ${f(a.tableHours + b.tableHours)} table-hours in all; first two rows include creation, "after creation" counts from the task that took in each table's first scan`,
  ].join('\n');
}
