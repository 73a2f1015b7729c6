// Many tables on one dev server: T tables, W worker processes, each table sealing one
// small generation every interval (staggered), for M minutes, once every table is up
// (its first snapshot done; --no-settle seals while they still start). Reports seal ->
// merged latency (from the histories; --wait-merged waits for each through MergeWaiter,
// as a client would), workflow task timeouts and failures, where the time went, CPU
// (by minute, and per process) and peak RSS of the server and of each worker, and
// history events per table. --idle N adds N tables nobody writes: their CPU is measured
// apart, in a window before the writers start where every table is idle, and their
// workflow tasks during the run are counted from their histories.
//
//   npx tsx bench/many-tables.ts [--tables 1000] [--idle 0] [--idle-window-secs 240] [--workers 2] [--minutes 10] [--interval-secs 60] [--rows 100] [--wait-merged] [--no-settle] [--start-dev-defaults] [--server-pprof-port PORT]

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { temporal } from '@temporalio/proto';
import type { ChildProcess } from 'node:child_process';
import { connectClient } from '../src/client/connect';
import { MergeWaiter } from '../src/client/merge-waiter';
import { TableClient } from '../src/client/table-client';
import type { StatusView } from '../workflows/messages';
import { TableWriter, workflowArgsFor } from '../src/client/table-writer';
import { workflowIdForTable } from '../src/messages/names';
import { createTableMeta } from '../src/storage/generation-store';
import { generateRows } from '../src/writer';
import { activityRunsOf, ms } from '../test/support/history';
import { stat, workflowTaskLatencies } from './phases';
import { liveRecords } from '../src/worker/registry';
import { benchServer, cpuSeconds, mib, minorFaults, peakRssBytes, peakRssPerByte, startWorkerProcess, stopProcess, threadCpuSeconds, threadsSince } from './support';
import { sleep } from '../src/util/sleep';

const E = temporal.api.enums.v1.EventType;

const { values: opt } = parseArgs({
  options: {
    tables: { type: 'string', default: '1000' },
    idle: { type: 'string', default: '0' },
    'idle-window-secs': { type: 'string', default: '240' },
    workers: { type: 'string', default: '2' },
    minutes: { type: 'string', default: '10' },
    'warm-up-minutes': { type: 'string', default: '0' },
    'interval-secs': { type: 'string', default: '60' },
    rows: { type: 'string', default: '100' },
    'wait-merged': { type: 'boolean', default: false },
    /** Seal while the tables are still starting (their first workflow tasks and snapshots queued) instead of once they are up. */
    'no-settle': { type: 'boolean', default: false },
    /** start-dev's own SQLite and search-attribute settings instead of ours, to compare. */
    'start-dev-defaults': { type: 'boolean', default: false },
    // Serves the dev server's Go pprof here: go tool pprof http://127.0.0.1:PORT/debug/pprof/profile?seconds=90
    'server-pprof-port': { type: 'string' },
  },
});
const num = (name: keyof typeof opt, min: number): number => {
  const n = Number(opt[name]);
  if (!Number.isFinite(n) || n < min) throw new Error(`--${name}: ${JSON.stringify(opt[name])} must be a number >= ${min}`);
  return n;
};
const TABLES = Math.floor(num('tables', 1));
const IDLE = Math.floor(num('idle', 0));
const IDLE_WINDOW_MS = num('idle-window-secs', 0) * 1000;
/** The idle window waits for the workers to use under QUIET_CORES over one sample, at most QUIET_MAX_WAIT_MS (both shorter for short windows). */
const QUIET_CORES = 0.1;
const QUIET_SAMPLE_MS = Math.min(15_000, IDLE_WINDOW_MS);
const QUIET_MAX_WAIT_MS = Math.min(180_000, 3 * IDLE_WINDOW_MS);
const WORKERS = Math.floor(num('workers', 1));
const MINUTES = num('minutes', 0.01);
/**
 * Writers seal for this long before the measured window of MINUTES begins: every count
 * (seals, history events, activities, CPU) is of the window only. A fresh table runs each
 * maintenance kind once on its own before it knows the kind's cost (src/policy/rides.ts);
 * a window after a warm-up is what a fleet that has been running looks like.
 */
const WARM_MS = num('warm-up-minutes', 0) * 60_000;
const INTERVAL_MS = num('interval-secs', 0.1) * 1000;
const ROWS = Math.floor(num('rows', 1));
const PPROF_PORT = opt['server-pprof-port'] === undefined ? undefined : Math.floor(num('server-pprof-port', 1));
/**
 * With --wait-merged every seal is followed by a MergeWaiter wait (read-your-merges, an
 * awaitMerged update per seal: about two more workflow tasks each) and a table seals its
 * next generation only after that. By default writers seal on schedule, as streaming
 * writers do, and seal -> merged is read from the histories: the close of the commit
 * whose range covers the seal.
 */
const WAIT_MERGED = opt['wait-merged'] === true;
/**
 * By default the writers start once every table is up (its first snapshot done), as
 * streaming writers meet a fleet that is already running; how long 1,000 starts take
 * to settle is printed. --no-settle seals from the moment the last start returns, so
 * the first interval's seals queue behind the starts' workflow tasks and snapshots.
 */
const SETTLE = opt['no-settle'] !== true;
/** Longest the bench waits for the tables to settle before it seals anyway. */
const SETTLE_BOUND_MS = 10 * 60_000;

/** Appends in place (copying the array per value was quadratic over 10,000 seals). */
const pushTo = (m: Map<string, number[]>, key: string, v: number): void => {
  const a = m.get(key);
  if (a) a.push(v);
  else m.set(key, [v]);
};
/** How long after the run a seal may still take to be merged before it counts as not merged. */
const GRACE_MS = 60_000;

/**
 * Queries the tables' state (50 at a time) until `done` holds for each or the bound
 * passes, pausing `pauseMs` between rounds; returns how many it did not hold for.
 */
async function waitForTables(tables: TableClient, names: string[], done: (st: StatusView, name: string) => boolean, untilMs: number, pauseMs: number): Promise<number> {
  let waiting = names;
  while (waiting.length > 0 && performance.now() < untilMs) {
    const still: string[] = [];
    for (let i = 0; i < waiting.length; i += 50) {
      const chunk = waiting.slice(i, i + 50);
      const st = await Promise.all(chunk.map((n) => tables.state(n).catch(() => null)));
      chunk.forEach((n, k) => {
        const s = st[k];
        if (!s || !done(s, n)) still.push(n);
      });
    }
    waiting = still;
    if (waiting.length > 0) await sleep(pauseMs);
  }
  return waiting.length;
}

// Before its first snapshot a table's next one is due now (nextInSecs 0).
const firstSnapshotDone = (st: StatusView): boolean => !st.snapshot.running && st.snapshot.nextInSecs !== 0;

async function main(): Promise<void> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-bench-many-'));
  const root = path.join(tmp, 'data');
  const { address, server } = await benchServer(tmp, { startDevDefaults: opt['start-dev-defaults'] === true, ...(PPROF_PORT ? { pprofPort: PPROF_PORT } : {}) });
  const client = await connectClient({ address, namespace: 'default' });
  const taskQueue = `bench-many-${process.pid}`;
  const workers: ChildProcess[] = [];
  const names = Array.from({ length: TABLES }, (_, i) => `many-${process.pid}-${i}`);
  const idleNames = Array.from({ length: IDLE }, (_, i) => `idle-${process.pid}-${i}`);
  console.log(`many tables: ${TABLES} tables${IDLE ? ` (and ${IDLE} idle ones)` : ''} x 1 generation of ${ROWS} rows every ${INTERVAL_MS / 1000} s for ${MINUTES} min${WARM_MS ? ` after a warm-up of ${WARM_MS / 60_000} min (counted: the ${MINUTES} min only)` : ''}, ${WORKERS} worker processes, ${os.cpus().length} cores, ${opt['start-dev-defaults'] ? "start-dev's server settings" : 'our server settings'}; ${WAIT_MERGED ? 'each seal waited for with MergeWaiter' : 'seal -> merged from the histories'}`);
  try {
    for (let i = 0; i < WORKERS; i++) workers.push(await startWorkerProcess(address, taskQueue, root));
    const tables = new TableClient(client, taskQueue);
    const t0 = performance.now();
    const writers: TableWriter[] = [];
    const all = [...names, ...idleNames];
    for (let i = 0; i < all.length; i += 50) {
      const chunk = all.slice(i, i + 50);
      await Promise.all(
        chunk.map(async (name) => {
          const meta = await createTableMeta(root, { name, key: 'id', shards: ['s0'], indices: [] });
          await tables.start(workflowArgsFor(meta));
        }),
      );
    }
    for (const name of names) writers.push(await TableWriter.open(tables, root, name));
    console.log(`started ${all.length} table workflows in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    if (SETTLE) {
      const t1 = performance.now();
      const left = await waitForTables(tables, all, firstSnapshotDone, t1 + SETTLE_BOUND_MS, 1000);
      console.log(`settled (every table's first snapshot done) ${((performance.now() - t1) / 1000).toFixed(1)} s after the last start${left > 0 ? `: ${left} tables still not, sealing anyway` : ''}`);
    }

    const processCpu = () => ({ server: server ? (cpuSeconds(server.pid) ?? 0) : 0, workers: workers.reduce((a, w) => a + (cpuSeconds(w.pid!) ?? 0), 0) });
    if (IDLE > 0 && IDLE_WINDOW_MS > 0) {
      // Every table is up and nobody writes: what the fleet costs when it is idle. The
      // window starts once the workers are quiet (the garbage collection of the heap the
      // starts left behind took 5-7 s of CPU per worker in the first minute after them).
      const q0 = performance.now();
      for (let before = processCpu(); performance.now() - q0 < QUIET_MAX_WAIT_MS; ) {
        await sleep(QUIET_SAMPLE_MS);
        const now = processCpu();
        const busy = (now.workers - before.workers) / (QUIET_SAMPLE_MS / 1000);
        before = now;
        if (busy < QUIET_CORES) break;
      }
      console.log(`workers quiet (under ${QUIET_CORES} of a core for ${QUIET_SAMPLE_MS / 1000} s) ${((performance.now() - q0) / 1000).toFixed(0)} s after settling`);
      const c0 = processCpu();
      const w0 = performance.now();
      await sleep(IDLE_WINDOW_MS);
      const c1 = processCpu();
      const secs = (performance.now() - w0) / 1000;
      const perTableHour = (cpu: number) => ((cpu * 1000) / all.length) * (3600 / secs);
      console.log(`idle window (${all.length} tables up, none written, ${secs.toFixed(0)} s): server ${(c1.server - c0.server).toFixed(1)} s CPU, workers ${(c1.workers - c0.workers).toFixed(1)} s; per table-hour: server ${perTableHour(c1.server - c0.server).toFixed(1)} ms, workers ${perTableHour(c1.workers - c0.workers).toFixed(1)} ms`);
    }
    let bench0 = process.cpuUsage();
    // Cores busy by minute (server + workers + this process): where the machine ran out.
    const busyByMinute: string[] = [];
    const cpuNow = () => {
      const c = processCpu();
      const own = process.cpuUsage();
      return c.server + c.workers + (own.user + own.system) / 1e6;
    };
    let lastCpu = { at: performance.now(), cpu: cpuNow() };
    const sampler = setInterval(() => {
      const now = { at: performance.now(), cpu: cpuNow() };
      busyByMinute.push(((now.cpu - lastCpu.cpu) / ((now.at - lastCpu.at) / 1000)).toFixed(2));
      lastCpu = now;
    }, 60_000);
    const cpuCounters = () => ({
      server: server ? cpuSeconds(server.pid) : null,
      workers: workers.map((w) => cpuSeconds(w.pid!)),
      faults: workers.map((w) => minorFaults(w.pid!)),
      threads: workers.map((w) => threadCpuSeconds(w.pid!)),
    });
    let cpu0 = cpuCounters();
    // The measured window starts after the warm-up: its CPU from then on.
    const warmedUp = sleep(WARM_MS).then(() => {
      cpu0 = cpuCounters();
      bench0 = process.cpuUsage();
    });
    const waiter = new MergeWaiter(client);
    const latencies: number[] = [];
    /** Seal -> merged by the minute of the run the seal began in: the start's burst apart from the steady state. */
    const byMinute: number[][] = [];
    const writeByMinute: number[][] = [];
    const startEpoch = Date.now();
    /** Seals, events and activities from this time on are counted (after the warm-up). */
    const fromEpoch = startEpoch + WARM_MS;
    const failures: string[] = [];
    /** Per table: seq -> when its seal began (epoch ms), for the history-based latency. */
    const sealStarts = names.map(() => new Map<number, number>());
    let sealed = 0;
    let sealedBytes = 0;
    let unmerged = 0;
    const endAt = performance.now() + WARM_MS + MINUTES * 60_000;
    const startAt = performance.now();
    // Table i seals at startAt + (i / TABLES) * interval, then every interval.
    await Promise.all(
      writers.map(async (w, i) => {
        let next = startAt + (i / TABLES) * INTERVAL_MS;
        // With --wait-merged a table whose merges fall behind seals late (it waits for
        // each merge), and stops sealing at the end of the run; its last wait is bounded by GRACE_MS.
        for (let g = 0; next < endAt && performance.now() < endAt; g++, next += INTERVAL_MS) {
          await sleep(Math.max(0, next - performance.now()));
          const rows = generateRows({ keys: [g * ROWS, g * ROWS + 2 * ROWS], count: ROWS, shard: 's0', shards: ['s0'], seed: i * 7919 + g });
          const t = performance.now();
          const tEpoch = Date.now();
          try {
            const r = await w.write('s0', rows);
            // The write itself: the seal, plus a writer's first pressure query (bounded by 2 s).
            (writeByMinute[Math.floor((tEpoch - startEpoch) / 60_000)] ??= []).push(performance.now() - t);
            if (tEpoch >= fromEpoch) sealed++;
            sealedBytes += r.bytes;
            sealStarts[i]!.set(r.seq, tEpoch);
            if (!WAIT_MERGED) continue;
            const left = endAt + GRACE_MS - performance.now();
            const merged = await Promise.race([waiter.wait(w.meta.name, 's0', r.seq).then(() => true, () => false), sleep(Math.max(0, left)).then(() => false)]);
            if (!merged) {
              unmerged++;
              break;
            }
            latencies.push(performance.now() - t);
          } catch (e) {
            failures.push(`${w.meta.name}: ${e instanceof Error ? e.message : String(e)}`);
          }
        }
      }),
    );
    if (!WAIT_MERGED) {
      // Every table merged through its last seal, or the grace period is over.
      const lastOf = new Map(names.map((n, i) => [n, Math.max(0, ...sealStarts[i]!.keys())]));
      await waitForTables(tables, names.filter((n) => lastOf.get(n)! > 0), (st, n) => (st.shards[0]?.mergedThroughSeq ?? 0) >= lastOf.get(n)!, performance.now() + GRACE_MS, 2000);
    }
    clearInterval(sampler);
    await warmedUp;
    const runSecs = (performance.now() - startAt - WARM_MS) / 1000;
    const benchCpu = process.cpuUsage(bench0);
    const cpu1 = cpuCounters();

    // Workflow task timeouts/failures and history sizes, from every table's history.
    let wftFailures = 0;
    const events: number[] = [];
    const eventTypes = new Map<string, number>();
    const timersByWhat = new Map<string, { started: number; fired: number; canceled: number }>();
    const wftQueue: number[] = [];
    const wftRun: number[] = [];
    const timeouts: Record<string, number> = {};
    const activityQueue: number[] = [];
    const queueByType = new Map<string, number[]>();
    const activityRun = new Map<string, number[]>();
    for (let i = 0; i < names.length; i += 50) {
      await Promise.all(
        names.slice(i, i + 50).map(async (name, k) => {
          const h = await client.workflow.getHandle(workflowIdForTable(name)).fetchHistory();
          if (!WAIT_MERGED) {
            // Each seal is merged when the first completed commit whose range covers it closes.
            const commits = activityRunsOf(h)
              .filter((r) => r.type === 'commitMerge' && r.outcome === 'completed' && r.closedAtMs !== null)
              .map((r) => ({ toSeq: Number(/ \d+-(\d+)$/.exec(r.activityId)?.[1] ?? 0), atMs: r.closedAtMs! }));
            for (const [seq, at] of sealStarts[i + k]!) {
              if (at < fromEpoch) continue;
              const c = commits.find((x) => x.toSeq >= seq);
              if (c) {
                latencies.push(c.atMs - at);
                (byMinute[Math.floor((at - fromEpoch) / 60_000)] ??= []).push(c.atMs - at);
              }
              else unmerged++;
            }
          }
          const ev = (h.events ?? []).filter((e) => ms(e.eventTime) >= fromEpoch);
          events.push(ev.length);
          countTimers(ev, timersByWhat);
          for (const e of ev) {
            const t = E[e.eventType ?? 0]?.replace('EVENT_TYPE_', '') ?? String(e.eventType);
            eventTypes.set(t, (eventTypes.get(t) ?? 0) + 1);
          }
          const w = workflowTaskLatencies(ev);
          wftQueue.push(...w.wftQueue);
          wftRun.push(...w.wftRun);
          for (const [t, n] of Object.entries(w.timeouts)) timeouts[t] = (timeouts[t] ?? 0) + n;
          for (const r of activityRunsOf(h)) {
            if (r.startedAtMs === null || r.scheduledAtMs < fromEpoch) continue;
            activityQueue.push(r.startedAtMs - r.scheduledAtMs);
            pushTo(queueByType, r.type, r.startedAtMs - r.scheduledAtMs);
            if (r.closedAtMs !== null) pushTo(activityRun, r.type, r.closedAtMs - r.startedAtMs);
          }
          wftFailures += ev.filter((e) => e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_FAILED).length;
        }),
      );
    }
    const l = stat(latencies);
    const ev = stat(events);
    const perHour = (n: number) => (n * 3600) / runSecs;
    const offered = Math.round((TABLES * MINUTES * 60_000) / INTERVAL_MS);
    console.log(`offered ${offered} seals, sealed ${sealed}, merged${WAIT_MERGED ? ' and answered' : ''} ${latencies.length}, not merged within ${GRACE_MS / 1000} s after the end ${unmerged}, failures ${failures.length}${failures.length ? ` (first: ${failures[0]})` : ''}`);
    console.log(`seal -> merged (ms): p50 ${l.p50.toFixed(0)}  p99 ${l.p99.toFixed(0)}  max ${Math.max(0, ...latencies).toFixed(0)}`);
    const perMinute = (rows: number[][]) => rows.map((v, m) => `${m + 1}: ${(stat(v).p50 / 1000).toFixed(2)}/${(stat(v).p99 / 1000).toFixed(2)}`).join('  ');
    if (byMinute.length > 1) {
      // The first interval also carries every table's start (workflow task, snapshot,
      // the writer's first pressure query); later ones are the steady state.
      const steady = stat(byMinute.slice(Math.ceil(INTERVAL_MS / 60_000)).flat());
      console.log(`  after the first ${INTERVAL_MS / 1000} s (steady state): p50 ${steady.p50.toFixed(0)}  p99 ${steady.p99.toFixed(0)} ms`);
      console.log(`  by minute of the seal (p50/p99 s): ${perMinute(byMinute)}`);
    }
    console.log(`  the write call alone (seal and pressure), by minute (p50/p99 s): ${perMinute(writeByMinute)}`);
    console.log(`  cores busy by minute (server, workers and bench, of ${os.cpus().length}): ${busyByMinute.map((b, m) => `${m + 1}: ${b}`).join('  ')}`);
    const wftTimeouts = Object.values(timeouts).reduce((a, b) => a + b, 0);
    console.log(`workflow task timeouts ${wftTimeouts}${wftTimeouts ? ` (${Object.entries(timeouts).map(([t, n]) => `${t} ${n}`).join(', ')})` : ''}, workflow task failures ${wftFailures}`);
    const line = (name: string, v: number[]) => `  ${name.padEnd(28)} n ${String(v.length).padStart(6)}  p50 ${stat(v).p50.toFixed(0).padStart(6)}  p99 ${stat(v).p99.toFixed(0).padStart(6)} ms`;
    console.log(['where the time went (from the histories):', line('workflow task queue', wftQueue), line('workflow task run', wftRun), line('activity queue', activityQueue), ...[...queueByType].map(([t, v]) => line(`  queue of ${t}`, v)), ...[...activityRun].map(([t, v]) => line(`activity ${t}`, v))].join('\n'));
    console.log(`per seal: ${(ev.sum / Math.max(1, sealed)).toFixed(1)} history events, ${(wftRun.length / Math.max(1, sealed)).toFixed(2)} workflow tasks, ${(activityQueue.length / Math.max(1, sealed)).toFixed(2)} activities`);
    console.log(`  by type: ${[...eventTypes].sort((a, b) => b[1] - a[1]).map(([t, n]) => `${t.toLowerCase()} ${(n / Math.max(1, sealed)).toFixed(2)}`).join(', ')}`);
    const perSeal = (n: number) => (n / Math.max(1, sealed)).toFixed(2);
    console.log(`  timers by what they waited for (started/fired/canceled per seal): ${[...timersByWhat].sort((a, b) => b[1].started - a[1].started).map(([w, n]) => `${w} ${perSeal(n.started)}/${perSeal(n.fired)}/${perSeal(n.canceled)}`).join(', ')}`);
    console.log(`history events per table: p50 ${ev.p50}  max ${Math.max(0, ...events)}  (${perHour(ev.p50).toFixed(0)} per table per hour at p50)`);
    const d = (a: number | null, b: number | null) => (a === null || b === null ? null : b - a);
    const serverCpu = d(cpu0.server, cpu1.server);
    console.log(`server: CPU ${serverCpu === null ? 'unknown (external server)' : `${serverCpu.toFixed(1)} s (${((100 * serverCpu) / runSecs).toFixed(0)}% of one core, ${((1000 * serverCpu) / Math.max(1, sealed)).toFixed(0)} ms per seal)`}, peak RSS ${server ? mib(peakRssBytes(server.pid)) : 'unknown'}`);
    const bc = (benchCpu.user + benchCpu.system) / 1e6;
    console.log(`bench (writers and their Temporal client): CPU ${bc.toFixed(1)} s (${((100 * bc) / runSecs).toFixed(0)}% of one core, ${((1000 * bc) / Math.max(1, sealed)).toFixed(0)} ms per seal)`);
    workers.forEach((w, i) => {
      const c = d(cpu0.workers[i] ?? null, cpu1.workers[i] ?? null);
      const faults = d(cpu0.faults[i] ?? null, cpu1.faults[i] ?? null);
      console.log(`worker ${i + 1}: CPU ${c === null ? 'unknown' : `${c.toFixed(1)} s (${((100 * c) / runSecs).toFixed(0)}% of one core)`}, ${peakRssPerByte(w.pid!, sealedBytes)}, page faults ${faults ?? 'unknown'}`);
    });
    // Which part of the workers a seal keeps busy: the workflow thread, the activities' JavaScript, Lance's and the SDK core's runtimes.
    const byThread = new Map<string, number>();
    cpu1.threads.forEach((now, i) => {
      for (const [name, secs] of threadsSince(now, cpu0.threads[i] ?? new Map())) byThread.set(name, (byThread.get(name) ?? 0) + secs);
    });
    const threadLine = [...byThread].filter(([, secs]) => secs > 0).sort((a, b) => b[1] - a[1]).map(([name, secs]) => `${name} ${((1000 * secs) / Math.max(1, sealed)).toFixed(1)}`);
    console.log(`workers' CPU per seal by thread (ms): ${threadLine.join(', ')}`);
    // Admission as each worker last recorded it: a unit that took a claim without the
    // SDK's mark waited MARK_WAIT_MS first (memory-ledger.ts), so it must stay 0.
    for (const r of await liveRecords(root)) {
      console.log(`worker ${r.pid}: unmarked claim takes ${r.unmarkedTakes ?? 0}, mark waits ${r.markWaits?.count ?? 0} (mean ${((r.markWaits?.totalMs ?? 0) / Math.max(1, r.markWaits?.count ?? 0)).toFixed(1)} ms, max ${(r.markWaits?.maxMs ?? 0).toFixed(0)} ms), eager activity tasks asked/granted/used ${r.eager?.asked ?? 0}/${r.eager?.granted ?? 0}/${r.eager?.used ?? 0}, reserved ${mib(r.reservedBytes)} of ${mib(r.budgetBytes)}, claim ${mib(r.claimBytes)}, waiting ${r.waiting}`);
    }
    if (IDLE > 0) {
      // The idle tables during the run: what they added to the server's and workers' work.
      let tasks = 0;
      let idleEvents = 0;
      for (let i = 0; i < idleNames.length; i += 50) {
        await Promise.all(
          idleNames.slice(i, i + 50).map(async (name) => {
            const ev = ((await client.workflow.getHandle(workflowIdForTable(name)).fetchHistory()).events ?? []).filter((e) => Number(e.eventTime?.seconds ?? 0) * 1000 >= fromEpoch);
            idleEvents += ev.length;
            tasks += ev.filter((e) => e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED).length;
          }),
        );
      }
      const tableHours = (IDLE * runSecs) / 3600;
      console.log(`idle tables during the run: ${tasks} workflow tasks, ${idleEvents} history events (${(tasks / tableHours).toFixed(2)} tasks per idle table-hour), ${((100 * tasks) / Math.max(1, wftRun.length + tasks)).toFixed(1)}% of all workflow tasks`);
    }
    // Falling behind is a result (reported above), not a failure; errors are.
    process.exitCode = failures.length === 0 ? 0 : 1;
  } finally {
    const everyName = [...names, ...idleNames];
    for (let i = 0; i < everyName.length; i += 100) {
      await Promise.all(everyName.slice(i, i + 100).map((n) => client.workflow.getHandle(workflowIdForTable(n)).terminate('benchmark done').catch(() => undefined)));
    }
    for (const w of workers) await stopProcess(w);
    await client.connection.close();
    await server?.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(`many-tables: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  process.exitCode = 1;
});

/**
 * Timers of one history by what they waited for: the summary the workflow gave each
 * (workflows/timers.ts), up to its first parenthesis or digit, so "promote merge/s0 to
 * class 1 (waited 60 s)" and "optimize due (every 300 s)" each count as one kind.
 */
function countTimers(ev: readonly temporal.api.history.v1.IHistoryEvent[], into: Map<string, { started: number; fired: number; canceled: number }>): void {
  const what = new Map<string, string>();
  for (const e of ev) {
    const a = e.timerStartedEventAttributes;
    if (e.eventType === E.EVENT_TYPE_TIMER_STARTED && a?.timerId) {
      const data = e.userMetadata?.summary?.data;
      const summary = data ? (JSON.parse(Buffer.from(data).toString('utf8')) as string) : '(none)';
      const w = summary.split(/[(0-9]/)[0]!.trim() || summary;
      what.set(a.timerId, w);
      const n = into.get(w) ?? { started: 0, fired: 0, canceled: 0 };
      into.set(w, { ...n, started: n.started + 1 });
    }
    const id = e.timerFiredEventAttributes?.timerId ?? e.timerCanceledEventAttributes?.timerId;
    const w = id ? what.get(id) : undefined;
    if (w === undefined) continue;
    const n = into.get(w)!;
    if (e.eventType === E.EVENT_TYPE_TIMER_FIRED) n.fired++;
    else if (e.eventType === E.EVENT_TYPE_TIMER_CANCELED) n.canceled++;
  }
}
