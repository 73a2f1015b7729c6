import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { connectClient } from '../src/client/connect';
import { TableClient } from '../src/client/table-client';
import { DEFAULT_SWEEP_SECS } from '../src/config/config-schema';
import type { PolicyOverride } from '../src/config/policy-schema';
import { shardNames, workflowIdForTable } from '../src/messages/names';
import { createTableMeta } from '../src/storage/generation-store';
import { MergeWaiter } from '../src/client/merge-waiter';
import { TableWriter, workflowArgsFor } from '../src/client/table-writer';
import { createWorker } from '../src/worker/create-worker';
import { startStoreSweeper } from '../src/worker/store-sweeper';
import { generateRows } from '../src/writer';

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
  /** Seal one generation right after creation, and count from its merge. */
  writeOnce?: boolean;
}

export const MODES: readonly Mode[] = [
  // What every table cost before the idle-cost rules: a scan every 60 s, optimize, index
  // and gc prepared every period whether or not anything changed.
  { name: 'before', label: 'fixed 60 s scan, periodic kinds always due', policy: { snapshotMaxIntervalSecs: 60, periodicWhenIdle: true } },
  { name: 'after', label: 'defaults', policy: {} },
  // A tenant's table written once and idle since: the scans that look for lost signals
  // after activity back off from snapshotIntervalSecs to snapshotMaxIntervalSecs.
  { name: 'written', label: 'defaults, one generation sealed and merged at creation', policy: {}, writeOnce: true },
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
async function countHistory(client: Client, workflowId: string, untilMs: number, idleAfterMs = 0): Promise<Counted> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const events = (history.events ?? []).filter((e) => ms(e.eventTime) <= untilMs);
  const c: Counted = { startedAtMs: ms(events[0]?.eventTime), events: events.length, workflowTasks: 0, timers: 0, activities: {}, idleFromMs: null, idleEvents: 0, idleWorkflowTasks: 0 };
  let scanDone = false;
  // The commands of the task that took in the first scan (its timer, search attributes)
  // are recorded after it completed; idle cost starts with the first timer firing.
  let woken = false;
  for (const e of events) {
    if (c.idleFromMs !== null && e.eventType === E.EVENT_TYPE_TIMER_FIRED && ms(e.eventTime) > idleAfterMs) woken = true;
    if (woken) {
      c.idleEvents++;
      if (e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_STARTED) c.idleWorkflowTasks++;
    }
    if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) scanDone = true;
    if (scanDone && c.idleFromMs === null && e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED && ms(e.eventTime) > idleAfterMs) c.idleFromMs = ms(e.eventTime);
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
  /** The store sweep's period (default worker.sweepSecs' default); 0: none. */
  sweepSecs?: number;
  modes?: readonly Mode[];
  log?: (line: string) => void;
}

/** Runs one worker, creates the tables of every mode, waits, and counts their histories. */
export async function measureIdleCost(opts: MeasureOptions): Promise<IdleCostReport> {
  const namespace = opts.namespace ?? 'default';
  const modes = opts.modes ?? MODES;
  const log = opts.log ?? (() => undefined);
  const client = await connectClient({ address: opts.address, namespace });
  // With a memory budget, so it is in the registry the store sweep elects its sweeper from.
  const created = await createWorker({ address: opts.address, namespace, taskQueue: opts.taskQueue, deps: { dataRoot: opts.dataRoot }, shutdownGraceSecs: 2, memoryBudgetBytes: 2 ** 31 });
  const { worker, connection } = created;
  const running = worker.run();
  // The store sweep every worker process runs (worker.sweepSecs): part of what idle tables cost.
  const sweeper = opts.sweepSecs === 0 ? null : startStoreSweeper({ dataRoot: opts.dataRoot, taskQueue: opts.taskQueue, identity: created.identity, everySecs: opts.sweepSecs ?? DEFAULT_SWEEP_SECS, client: async () => client, log });
  const ids = new Map<string, string[]>(modes.map((m) => [m.name, []]));
  const mergedAt = new Map<string, number>();
  try {
    const tables = new TableClient(client, opts.taskQueue);
    const waiter = new MergeWaiter(client);
    // Interleaved, so every mode sees the same server load at the same time.
    for (let i = 0; i < opts.tablesPerMode; i++) {
      for (const m of modes) {
        const meta = await createTableMeta(opts.dataRoot, { name: `idle-${m.name}-${i}-${process.pid}`, key: 'id', shards: shardNames(2), indices: [] });
        await tables.start({ ...workflowArgsFor(meta), policy: m.policy });
        ids.get(m.name)!.push(workflowIdForTable(meta.name));
        if (m.writeOnce) {
          const writer = await TableWriter.open(tables, opts.dataRoot, meta.name);
          const shard = meta.shards[0]!;
          const { seq } = await writer.write(shard, generateRows({ keys: [0, 999], count: 100, shard, shards: meta.shards, seed: i }));
          await writer.close();
          await waiter.wait(meta.name, shard, seq);
          mergedAt.set(workflowIdForTable(meta.name), Date.now());
        }
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
      for (const id of ids.get(m.name)!) counted.push(await countHistory(client, id, endMs, mergedAt.get(id)));
      reports.push(summarize(m, ids.get(m.name)!, counted, endMs));
    }
    return { seconds: opts.seconds, endMs, tablesPerMode: opts.tablesPerMode, modes: reports };
  } finally {
    // On a server the bench did not start, the workflows would otherwise run on forever.
    for (const id of [...ids.values()].flat()) await client.workflow.getHandle(id).terminate('idle-cost benchmark done').catch(() => undefined);
    await sweeper?.stop();
    worker.shutdown();
    await running.catch((e: unknown) => log(`worker: ${String(e)}`));
    await created.unregister();
    await connection.close();
    await client.connection.close();
  }
}

/** The side-by-side table the bench prints: a column per mode, the first two's ratio. */
export function formatReport(r: IdleCostReport): string {
  const ms = r.modes;
  const [a, b] = ms;
  if (!a || !b) return JSON.stringify(r);
  const f = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : String(n));
  const per = (m: ModeReport, n: number) => f(n / m.tableHours);
  const kinds = [...new Set(ms.flatMap((m) => Object.keys(m.activities)))].sort();
  const row = (name: string, v: (m: ModeReport) => string, ratio = ''): string[] => [name, ...ms.map(v), ratio];
  const rows: string[][] = [
    ['per table-hour', ...ms.map((m) => m.mode), `${a.mode} / ${b.mode}`],
    row('history events', (m) => f(m.perTableHour.events), `${f(a.perTableHour.events / b.perTableHour.events)}x`),
    row('workflow tasks', (m) => f(m.perTableHour.workflowTasks), `${f(a.perTableHour.workflowTasks / b.perTableHour.workflowTasks)}x`),
    row('history events, after creation', (m) => f(m.idle.perTableHour.events)),
    row('workflow tasks, after creation', (m) => f(m.idle.perTableHour.workflowTasks)),
    row('timers started', (m) => per(m, m.timers)),
    ...kinds.map((k) => row(`activity ${k}`, (m) => per(m, m.activities[k] ?? 0))),
  ];
  const w = rows[0]!.map((_, i) => Math.max(...rows.map((x) => x[i]!.length)));
  const lines = rows.map((x) => x.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  '));
  return [
    ...lines,
    '',
    ...ms.map((m) => `${m.mode}: ${m.label}`),
    `${ms.map((m) => m.tables).join(' + ')} tables, ${f(ms.reduce((x, m) => x + m.tableHours, 0))} table-hours in all; the first two rows include creation, "after creation" counts from the task that took in each table's first scan (written: its first timer after the merge)`,
  ].join('\n');
}
