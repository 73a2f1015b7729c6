import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { ChildProcess } from 'node:child_process';
import { temporal } from '@temporalio/proto';
import { connectClient } from '../src/client/connect';
import { TableClient } from '../src/client/table-client';
import { workflowArgsFor } from '../src/client/table-writer';
import type { TableWorkflowArgs } from '../workflows';
import { shardNames } from '../src/messages/names';
import { createTableMeta } from '../src/storage/generation-store';
import { benchServer, cpuSeconds, peakRssPerByte, startWorkerProcess, stopProcess } from './support';
import { stat, workflowTaskLatencies } from './phases';
import { PROJECT_ROOT } from '../src/util/project-paths';

// What a workflow task costs a worker in two modes side by side in one run: the SDK's
// workflow stack traces on and off (src/worker/workflow-stack-traces.ts; `--compare
// traces`, the default), or the sandbox's per-call watchdog kept and dropped (`--compare
// watchdog`: the SDK calls into the workflow sandbox with a 5 s timeout, and Node starts
// and joins a thread for every such call; bench/no-vm-timeout.cjs drops it, bench only).
// Two `turnstile worker` processes, one per mode, each with its own task queue and N idle tables. Every round
// sends each table a demand signal that changes nothing (seq 0), to both modes' tables
// at once, so each signal is one workflow task of the real table workflow and nothing
// else. Reported per mode: the worker process's CPU per workflow task (from /proc) and
// the tasks' started -> completed latency (from the histories).
//
//   npx tsx bench/workflow-task-cost.ts [--tables 20] [--rounds 30] [--pause-ms 100] [--compare traces|watchdog]

const E = temporal.api.enums.v1.EventType;

const { values: opt } = parseArgs({
  options: {
    tables: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '30' },
    'pause-ms': { type: 'string', default: '100' },
    compare: { type: 'string', default: 'traces' },
  },
});
const TABLES = Number(opt.tables);
const ROUNDS = Number(opt.rounds);
const PAUSE_MS = Number(opt['pause-ms']);
for (const [name, v, min] of [['--tables', TABLES, 1], ['--rounds', ROUNDS, 1], ['--pause-ms', PAUSE_MS, 0]] as const) {
  if (!Number.isInteger(v) || v < min) {
    console.error(`${name}: must be an integer >= ${min}`);
    process.exit(2);
  }
}

if (opt.compare !== 'traces' && opt.compare !== 'watchdog') {
  console.error(`--compare: ${JSON.stringify(opt.compare)} is not valid; accepted: traces, watchdog`);
  process.exit(2);
}

interface Mode {
  name: string;
  env: NodeJS.ProcessEnv;
}

interface Run {
  mode: Mode;
  tables: TableClient;
  names: string[];
  args: TableWorkflowArgs[];
  pid: number;
}
const noVmTimeout = `--require ${path.join(PROJECT_ROOT, 'bench', 'no-vm-timeout.cjs')}`;
const MODES: Mode[] =
  opt.compare === 'traces'
    ? [
        { name: 'stack traces on', env: { TURNSTILE_WORKFLOW_STACK_TRACES: '1' } },
        { name: 'stack traces off (default)', env: { TURNSTILE_WORKFLOW_STACK_TRACES: '0' } },
      ]
    : [
        { name: 'watchdog (SDK default)', env: {} },
        { name: 'no watchdog (bench only)', env: { NODE_OPTIONS: [process.env.NODE_OPTIONS, noVmTimeout].filter(Boolean).join(' ') } },
      ];

const ms = (t: temporal.api.history.v1.IHistoryEvent) => Number(t.eventTime!.seconds) * 1000 + Math.floor((t.eventTime!.nanos ?? 0) / 1e6);

async function main(): Promise<void> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-bench-wft-'));
  const root = path.join(tmp, 'data');
  const { address, server } = await benchServer(tmp);
  const client = await connectClient({ address, namespace: 'default' });
  const workers: ChildProcess[] = [];
  try {
    const runs: Run[] = [];
    for (const [m, mode] of MODES.entries()) {
      const taskQueue = `bench-wft-${process.pid}-${m}`;
      workers.push(await startWorkerProcess(address, taskQueue, root, mode.env));
      const tables = new TableClient(client, taskQueue);
      const names: string[] = [];
      const args: TableWorkflowArgs[] = [];
      for (let i = 0; i < TABLES; i++) {
        const meta = await createTableMeta(root, { name: `wft-${process.pid}-${m}-${i}`, key: 'id', shards: shardNames(1), indices: [] });
        const a = { ...workflowArgsFor(meta), policy: { periodSecs: { optimize: 0, index: 0, gc: 0 } } };
        await tables.start(a);
        names.push(meta.name);
        args.push(a);
      }
      runs.push({ mode, tables, names, args, pid: workers[m]!.pid! });
    }
    // Every table up (its first scan done) before the clock.
    for (const r of runs) for (const n of r.names) while ((await r.tables.status(n)).snapshot.running) await new Promise((res) => setTimeout(res, 100));
    await new Promise((res) => setTimeout(res, 1000));

    const startMs = Date.now();
    const cpu0 = runs.map((r) => cpuSeconds(r.pid) ?? NaN);
    for (let round = 0; round < ROUNDS; round++) {
      await Promise.all(runs.flatMap((r) => r.args.map((a) => r.tables.demand(a, { shard: 's0', sealedThroughSeq: 0, revision: 0 }))));
      if (PAUSE_MS) await new Promise((res) => setTimeout(res, PAUSE_MS));
    }
    // Each table's last signal taken in: every signal recorded, no workflow task open.
    const lastEvents = async (r: Run, n: string) => (await r.tables.handle(n).fetchHistory()).events ?? [];
    for (const r of runs) {
      for (const n of r.names) {
        for (;;) {
          const ev = await lastEvents(r, n);
          const signals = ev.filter((e) => e.eventType === E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED && ms(e) >= startMs).length;
          const count = (t: temporal.api.enums.v1.EventType) => ev.filter((e) => e.eventType === t).length;
          const open = count(E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED) - count(E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) - count(E.EVENT_TYPE_WORKFLOW_TASK_FAILED) - count(E.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT);
          if (signals >= ROUNDS && open === 0) break;
          await new Promise((res) => setTimeout(res, 100));
        }
      }
    }
    const cpu1 = runs.map((r) => cpuSeconds(r.pid) ?? NaN);

    console.log(`workflow task cost: ${TABLES} tables per mode, ${ROUNDS} rounds of one no-op demand signal per table (${PAUSE_MS} ms apart), ${os.cpus().length} cores`);
    console.log('mode                          tasks  worker CPU s  CPU ms/task  task p50 ms  task p99 ms');
    const perTask: number[] = [];
    for (const [m, r] of runs.entries()) {
      const lat: number[] = [];
      for (const n of r.names) lat.push(...workflowTaskLatencies((await lastEvents(r, n)).filter((e) => ms(e) >= startMs)).wftRun);
      const { n: tasks, p50, p99 } = stat(lat);
      const cpu = (cpu1[m] as number) - (cpu0[m] as number);
      perTask.push((cpu * 1000) / tasks);
      console.log(`${r.mode.name.padEnd(28)} ${String(tasks).padStart(6)} ${cpu.toFixed(2).padStart(13)} ${((cpu * 1000) / tasks).toFixed(2).padStart(12)} ${String(p50).padStart(12)} ${String(p99).padStart(12)}`);
    }
    console.log(`CPU per workflow task, ${MODES[1]!.name} / ${MODES[0]!.name}: ${((perTask[1] as number) / (perTask[0] as number)).toFixed(2)}x`);
    // The signals announce no generation: the workers' peaks are what their tables' workflows hold.
    for (const r of runs) console.log(`worker (${r.mode.name}): ${peakRssPerByte(r.pid, 0)}`);
  } finally {
    for (const w of workers) await stopProcess(w);
    await client.connection.close();
    await server?.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
