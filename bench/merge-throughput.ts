// Merge throughput, three ways on the same generations in one run:
//   A   through Turnstile: seal every generation (TableWriter), one worker merges them;
//   B1  direct, the naive client: one conditional mergeInsert per generation;
//   B2  direct, batched: one mergeInsert per shard with all its generations deduplicated
//       together (Turnstile's batching without Temporal), to show where the time goes.
// B1 and B2 each run in a fresh process (this script again, with --direct), as A's worker does.
// Then checks the three Lance tables hold identical rows. Ratios, not absolute numbers:
// these machines are noisy.
//
//   npx tsx bench/merge-throughput.ts [--shards 4] [--generations 40] [--rows 2500] [--storage fs|s3] [--warm-up]
//
// --storage s3 keeps generations, prepared batches and the three Lance tables in a
// local SeaweedFS (started here, like `turnstile dev --storage s3`) instead of a directory.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { spawn, type ChildProcess } from 'node:child_process';
import { NewestRowPerKey } from '../activities/newest-row-per-key';
import { connectClient } from '../src/client/connect';
import { MergeWaiter } from '../src/client/merge-waiter';
import { TableClient } from '../src/client/table-client';
import { TableWriter, workflowArgsFor } from '../src/client/table-writer';
import { shardNames, workflowIdForTable } from '../src/messages/names';
import type { ArrowTable } from '../src/storage/arrow';
import { createTableMeta } from '../src/storage/generation-store';
import { dirnameLoc, joinLoc } from '../src/storage/location';
import { conditionalUpsert, openLanceTable, openOrCreateLanceTable } from '../src/storage/lance-table';
import { tableFromRows, withSeqColumn } from '../src/storage/records';
import { generateRows } from '../src/writer';
import { formatPhases, formatTimeline, phasesOf, type Phases } from './phases';
import { benchS3, benchServer, collectGarbage, cpuSeconds, firstTouchMicros, minorFaults, peakRssBytes, resetPeakRss, rssBytes, startWorkerProcess, stopProcess, threadCpuSeconds, threadMinorFaults, threadsSince } from './support';

const { values: opt } = parseArgs({
  options: {
    shards: { type: 'string', default: '4' },
    generations: { type: 'string', default: '40' },
    rows: { type: 'string', default: '2500' },
    // Prints every activity and seal on one clock: where A's critical path waited.
    timeline: { type: 'boolean', default: false },
    storage: { type: 'string', default: 'fs' },
    // With --storage s3: every request to the local SeaweedFS delayed this long, as to a remote store.
    's3-latency-ms': { type: 'string', default: '0' },
    // Policy keys for A's table on top of the bench's own, e.g. '{"maxConcurrentPreparations":1}'.
    policy: { type: 'string', default: '{}' },
    // Runs A once on a table of the same shape through the same worker and writers, and
    // B1 once into a table of its own, before the timed runs: steady-state processes
    // instead of ones that touch all their memory for the first time.
    'warm-up': { type: 'boolean', default: false },
    // Internal: the process B1 or B2 runs in (per-generation or per-shard), its root and table.
    direct: { type: 'string' },
    'direct-root': { type: 'string' },
    'direct-table': { type: 'string' },
  },
});
if (opt.storage !== 'fs' && opt.storage !== 's3') throw new Error(`--storage: ${JSON.stringify(opt.storage)} is not valid; accepted: fs, s3`);
const POLICY = ((): Record<string, unknown> => {
  try {
    const p: unknown = JSON.parse(String(opt.policy));
    if (p && typeof p === 'object' && !Array.isArray(p)) return p as Record<string, unknown>;
  } catch {
    // reported below
  }
  throw new Error(`--policy: ${JSON.stringify(opt.policy)} is not a JSON object of policy keys`);
})();
const positive = (name: string, v: string | undefined): number => {
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--${name}: ${JSON.stringify(v)} is not a positive integer`);
  return n;
};
const SHARDS = shardNames(positive('shards', opt.shards));
const S3_LATENCY_MS = opt['s3-latency-ms'] === '0' ? 0 : positive('s3-latency-ms', opt['s3-latency-ms']);
const GENERATIONS = positive('generations', opt.generations);
const ROWS = positive('rows', opt.rows);
const KEY = 'id';
const TABLE = opt['direct-table'] ?? `bench-${process.pid}`; // unique, in case TEMPORAL_ADDRESS points at a shared server
const WARM_UP = opt['warm-up'] === true;
const WARM_UP_TABLE = `${TABLE}-warm-up`;

// Overlapping keys: generation g of a shard samples ROWS of the ~2*ROWS keys of its
// window that route to it, and the window slides by a quarter of its width, so most
// rows update rows of earlier generations (the case last-writer-wins merging is for).
// The +64 per shard is slack for routing not splitting small windows exactly evenly.
const WINDOW = (2 * ROWS + 64) * SHARDS.length;
const STEP = Math.floor(WINDOW / 4);
const genRows = (shard: string, g: number): ArrowTable =>
  tableFromRows(generateRows({ keys: [g * STEP, g * STEP + WINDOW - 1], count: ROWS, shard, shards: SHARDS, seed: g + 1 }), KEY);

/** Every shard's generations, the same in every process of the bench (seeded), and their row count. */
function generations(): { gens: Map<string, ArrowTable[]>; total: number } {
  const gens = new Map(SHARDS.map((s) => [s, Array.from({ length: GENERATIONS }, (_, g) => genRows(s, g))]));
  return { gens, total: SHARDS.length * GENERATIONS * ROWS };
}

interface Result {
  method: string;
  rows: number;
  secs: number;
  /** Minor page faults of the process that did the merging (B1, B2). */
  faults?: number | null;
  note?: string;
}

const seconds = (t0: number): number => (performance.now() - t0) / 1000;

interface CpuUse {
  worker: number | null;
  /** The worker's minor page faults: memory it touched for the first time. */
  workerFaults: number | null;
  server: number | null;
  bench: number;
  /** The writers' (this process's) minor page faults. */
  benchFaults: number | null;
  /** The worker's CPU seconds by thread name, busiest first. */
  workerThreads: [string, number][];
  /** The worker's minor page faults by thread name, most first. */
  workerThreadFaults: [string, number][];
}

/** CPU seconds each process spent since `at`: whether A was bound by the 2 cores or by waiting. */
function cpuDuring(at: CpuMark, workerPid: number, serverPid: number | undefined): CpuUse {
  const since = (now: number | null, then: number | null): number | null => (now === null || then === null ? null : now - then);
  const b = process.cpuUsage(at.bench);
  return {
    worker: since(cpuSeconds(workerPid), at.worker),
    workerFaults: since(minorFaults(workerPid), at.workerFaults),
    server: serverPid === undefined ? null : since(cpuSeconds(serverPid), at.server),
    bench: (b.user + b.system) / 1e6,
    benchFaults: since(minorFaults(process.pid), at.benchFaults),
    workerThreads: threadsSince(threadCpuSeconds(workerPid), at.workerThreads, 0.005),
    workerThreadFaults: threadsSince(threadMinorFaults(workerPid), at.workerThreadFaults, 1),
  };
}

interface CpuMark {
  worker: number | null;
  workerFaults: number | null;
  workerThreads: Map<string, number>;
  workerThreadFaults: Map<string, number>;
  server: number | null;
  bench: NodeJS.CpuUsage;
  benchFaults: number | null;
}

const cpuMark = (workerPid: number, serverPid: number | undefined): CpuMark => ({
  worker: cpuSeconds(workerPid),
  workerFaults: minorFaults(workerPid),
  workerThreads: threadCpuSeconds(workerPid),
  workerThreadFaults: threadMinorFaults(workerPid),
  server: serverPid === undefined ? null : cpuSeconds(serverPid),
  bench: process.cpuUsage(),
  benchFaults: minorFaults(process.pid),
});

interface RunA {
  result: Result;
  root: string;
  phases: Phases;
  workerPeakRss: number | null;
  /** The worker's RSS when the timed round began; its peak is of the round alone when `peakOfRound`. */
  workerRssBefore: number | null;
  peakOfRound: boolean;
  bytesSealed: number;
  cpu: CpuUse;
  workerPid: number;
}

/** A: seal everything through TableWriter and wait until every shard is merged through its last seq. */
async function throughWorkflow(tmp: string, base: string, gens: Map<string, ArrowTable[]>, total: number): Promise<RunA> {
  const root = joinLoc(base, 'turnstile');
  let worker: ChildProcess | undefined;
  const { address, server } = await benchServer(tmp);
  const client = await connectClient({ address, namespace: 'default' });
  try {
    const taskQueue = `bench-merge-${process.pid}`;
    const w = await startWorkerProcess(address, taskQueue, root);
    worker = w;
    const tables = new TableClient(client, taskQueue);
    // One table sealed and merged to the end; the timed run, or a warm-up of the same shape.
    const round = async (name: string): Promise<RunA> => {
      const meta = await createTableMeta(root, { name, key: KEY, shards: SHARDS, indices: [] });
      // Only merges take turns: optimize/index/gc would add commits B does not do.
      await tables.start({ ...workflowArgsFor(meta), policy: { ...POLICY, periodSecs: { optimize: 0, index: 0, gc: 0 } } });
      const writer = await TableWriter.open(tables, root, name);
      await writer.refreshPressure();
      const waiter = new MergeWaiter(client);
      const sealMs: number[] = [];
      const sealedAt: { shard: string; seq: number; atMs: number }[] = [];
      let bytesSealed = 0;

      collectGarbage();
      const workerRssBefore = rssBytes(w.pid!);
      const peakOfRound = resetPeakRss(w.pid!);
      const cpu0 = cpuMark(w.pid!, server?.pid);
      const t0 = performance.now();
      const t0Epoch = Date.now();
      // One writer loop per shard, as independent writers would seal; each then waits
      // for its own last seq (the waiter coalesces, so this is one update per shard).
      await Promise.all(
        SHARDS.map(async (shard) => {
          let last = 0;
          for (const g of gens.get(shard)!) {
            const ts = performance.now();
            const r = await writer.write(shard, g);
            sealMs.push(performance.now() - ts);
            sealedAt.push({ shard, seq: r.seq, atMs: performance.now() - t0 });
            bytesSealed += r.bytes;
            last = r.seq;
          }
          await waiter.wait(name, shard, last);
        }),
      );
      const secs = seconds(t0);
      const cpu = cpuDuring(cpu0, w.pid!, server?.pid);
      const { signalError } = await writer.close();
      if (signalError) throw new Error(`demand signal failed: ${signalError}`);
      const workerPeakRss = peakRssBytes(w.pid!);
      const status = await tables.status(name);
      const history = await tables.handle(name).fetchHistory();
      const phases = phasesOf(history, sealMs);
      if (opt.timeline && name === TABLE) console.log([`timeline (ms after the first seal, at epoch ${t0Epoch} ms):`, ...formatTimeline(history, t0Epoch, sealedAt)].join('\n'));
      const note = `${status.counters.turns.merge} merge turns, ${status.counters.rowsMerged} rows changed, ${writer.demand.signalsSent} demand signals`;
      return { result: { method: 'A  Turnstile (workflow)', rows: total, secs, note }, root, phases, workerPeakRss, workerRssBefore, peakOfRound, bytesSealed, cpu, workerPid: w.pid! };
    };
    if (WARM_UP) {
      const warm = await round(WARM_UP_TABLE);
      console.log(`A warm-up (not timed): ${warm.result.secs.toFixed(2)} s, worker CPU ${warm.cpu.worker?.toFixed(2) ?? '?'} s, ${warm.cpu.workerFaults ?? '?'} page faults`);
    }
    return await round(TABLE);
  } finally {
    // The workflow would otherwise run on forever on an external server.
    for (const name of WARM_UP ? [TABLE, WARM_UP_TABLE] : [TABLE]) await client.workflow.getHandle(workflowIdForTable(name)).terminate('benchmark done').catch(() => undefined);
    await stopProcess(worker);
    await client.connection.close();
    await server?.stop();
  }
}

/** Newest row per key of `tables` fed in seq order; what a mergeInsert source must be. */
function dedup(tables: ArrowTable[]): ArrowTable | null {
  const acc = new NewestRowPerKey(KEY);
  for (const t of tables) acc.add(t);
  return acc.build();
}

/**
 * B1 / B2: apply the same generations with conditionalUpsert into a fresh table. Stamping
 * `_seq` and deduplicating are timed: a client without Turnstile has to do them too.
 * Seqs are 1..G per shard, exactly what sealing into a fresh store assigns.
 */
async function direct(root: string, method: string, gens: Map<string, ArrowTable[]>, total: number, perShard: boolean): Promise<Result> {
  collectGarbage();
  const cpu0 = process.cpuUsage();
  const faults0 = minorFaults(process.pid);
  const t0 = performance.now();
  const first = withSeqColumn(gens.get(SHARDS[0]!)![0]!, 1, KEY);
  const tbl = await openOrCreateLanceTable(root, TABLE, KEY, first.schema);
  let merges = 0;
  const upsert = async (batch: ArrowTable | null) => {
    if (!batch) return;
    await conditionalUpsert(tbl, KEY, batch);
    merges++;
  };
  if (perShard) {
    for (const shard of SHARDS) await upsert(dedup(gens.get(shard)!.map((t, i) => withSeqColumn(t, i + 1, KEY))));
  } else {
    // Round-robin over shards, generation by generation: the order they were sealed in A.
    for (let g = 0; g < GENERATIONS; g++) {
      for (const shard of SHARDS) await upsert(dedup([withSeqColumn(gens.get(shard)![g]!, g + 1, KEY)]));
    }
  }
  const secs = seconds(t0);
  const cpu = process.cpuUsage(cpu0);
  const faults = faults0 === null ? null : minorFaults(process.pid)! - faults0;
  tbl.close();
  return { method, rows: total, secs, faults, note: `${merges} mergeInserts, ${((cpu.user + cpu.system) / 1e6).toFixed(2)} CPU s, ${faults ?? '?'} page faults` };
}

const DIRECT_RESULT = 'direct result: ';

/**
 * B1 or B2 in a fresh process of its own, as A's worker is: run in this process after A,
 * a direct run took 0.2-0.5 s more CPU and up to twice as many page faults as in a
 * fresh one, so the order of the runs, not the method, decided part of the ratio.
 */
function directInChild(root: string, perShard: boolean): Promise<{ result: Result; warmUpSecs: number | null; pid: number }> {
  const args = [...process.execArgv, process.argv[1]!, ...process.argv.slice(2), '--direct', perShard ? 'per-shard' : 'per-generation', '--direct-root', root, '--direct-table', TABLE];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const line = out.split('\n').find((l) => l.startsWith(DIRECT_RESULT));
      if (code !== 0 || !line) reject(new Error(`the ${perShard ? 'B2' : 'B1'} process exited ${code}: ${out.slice(-2000)}`));
      else resolve(JSON.parse(line.slice(DIRECT_RESULT.length)) as { result: Result; warmUpSecs: number | null; pid: number });
    });
  });
}

/** The body of a directInChild process: the same generations, B1 (after its warm-up with --warm-up) or B2. */
async function directMain(mode: string, root: string): Promise<void> {
  if (mode !== 'per-generation' && mode !== 'per-shard') throw new Error(`--direct: ${JSON.stringify(mode)} is not valid; accepted: per-generation, per-shard`);
  const perShard = mode === 'per-shard';
  const { gens, total } = generations();
  const warmUp = WARM_UP && !perShard ? await direct(joinLoc(dirnameLoc(root), 'direct-warm-up'), 'B1 warm-up', gens, total, false) : null;
  const result = await direct(root, perShard ? 'B2 direct, 1 merge/shard' : 'B1 direct, 1 merge/generation', gens, total, perShard);
  console.log(`${DIRECT_RESULT}${JSON.stringify({ result, warmUpSecs: warmUp?.secs ?? null, pid: process.pid })}`);
}

/** Every row as one string, sorted by key: equal arrays mean equal tables. */
async function contents(root: string): Promise<string[]> {
  const tbl = await openLanceTable(root, TABLE);
  if (!tbl) throw new Error(`no Lance table ${TABLE} under ${root}`);
  const cols = ['id', 'value', 'n', '_seq'];
  const rows = (await tbl.query().select(cols).toArray()) as Record<string, unknown>[];
  tbl.close();
  return rows
    .map((r) => ({ id: Number(r.id), line: cols.map((c) => String(r[c])).join('|') }))
    .sort((a, b) => a.id - b.id)
    .map((r) => r.line);
}

function compare(name: string, a: string[], b: string[]): boolean {
  const diff = a.findIndex((line, i) => line !== b[i]);
  const ok = a.length === b.length && diff === -1;
  const detail = ok ? '' : diff === -1 ? ` (row counts differ)` : ` (first difference at row ${diff}: ${a[diff]} vs ${b[diff]})`;
  console.log(`${ok ? 'PASS' : 'FAIL'}  ${name}: ${a.length} vs ${b.length} rows${detail}`);
  return ok;
}

function printTable(results: Result[]): void {
  const base = results.find((r) => r.method.startsWith('B1'))!;
  const rate = (r: Result) => r.rows / r.secs;
  const header = ['method', 'rows', 'seconds', 'rows/s', 'ratio to direct (B1)', 'notes'];
  const lines = results.map((r) => [r.method, String(r.rows), r.secs.toFixed(2), Math.round(rate(r)).toString(), `${(rate(r) / rate(base)).toFixed(2)}x`, r.note ?? '']);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  for (const l of [header, ...lines]) console.log(l.map((c, i) => (i === 0 || i === 5 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ').trimEnd());
}

async function main(): Promise<void> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-bench-merge-'));
  const s3 = opt.storage === 's3' ? await benchS3(tmp, { latencyMs: S3_LATENCY_MS }) : undefined;
  const base = s3 ? s3.root : tmp;
  try {
    // Generated (and converted to Arrow) before any clock starts; B1 and B2 make the same in their processes.
    const { gens, total } = generations();
    console.log(`merge throughput: ${SHARDS.length} shards x ${GENERATIONS} generations x ${ROWS} rows = ${total} rows (overlapping keys), ${os.cpus().length} cores, storage ${base}`);
    const touchUs = firstTouchMicros();
    console.log(`first touch of a fresh 4 KiB page here: ${touchUs.toFixed(1)} us`);

    const a = await throughWorkflow(tmp, base, gens, total);
    console.log(`A  done in ${a.result.secs.toFixed(2)} s (${a.result.note})`);
    const { result: b1, warmUpSecs, pid: b1Pid } = await directInChild(joinLoc(base, 'direct-per-generation'), false);
    if (warmUpSecs !== null) console.log(`B1 warm-up (not timed): ${warmUpSecs.toFixed(2)} s`);
    console.log(`B1 done in ${b1.secs.toFixed(2)} s`);
    const { result: b2, pid: b2Pid } = await directInChild(joinLoc(base, 'direct-per-shard'), true);
    console.log(`B2 done in ${b2.secs.toFixed(2)} s`);
    console.log(`processes: bench and A's writers ${process.pid}, A's worker ${a.workerPid}, B1 ${b1Pid}, B2 ${b2Pid}`);

    const [ca, cb1, cb2] = [await contents(a.root), await contents(joinLoc(base, 'direct-per-generation')), await contents(joinLoc(base, 'direct-per-shard'))];
    const ok = [compare('A vs B1 (sorted rows by key)', ca, cb1), compare('B2 vs B1 (sorted rows by key)', cb2, cb1)].every(Boolean);
    console.log('');
    printTable([a.result, b1, b2]);
    console.log(`\nwhere A's time went (from the table's workflow history and the writers' seal timings):`);
    for (const line of formatPhases(a.phases)) console.log(`  ${line}`);
    const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
    console.log(`\nworker peak RSS ${a.workerPeakRss === null ? 'unknown (no /proc)' : mib(a.workerPeakRss)} for ${mib(a.bytesSealed)} of generations merged (${a.workerPeakRss === null ? '-' : (a.workerPeakRss / a.bytesSealed).toFixed(1)}x)`);
    if (a.workerPeakRss !== null && a.workerRssBefore !== null) {
      // What the merges themselves held: the peak over the worker's resident set before the round.
      const added = Math.max(0, a.workerPeakRss - a.workerRssBefore);
      console.log(`  of it added during A: ${mib(added)} over ${mib(a.workerRssBefore)} before (${(added / a.bytesSealed).toFixed(1)}x of the generations)${a.peakOfRound ? '' : '; the peak may predate A (VmHWM could not be reset)'}`);
    }
    const f = (x: number | null) => (x === null ? '?' : `${x.toFixed(2)} s`);
    const busy = [a.cpu.worker, a.cpu.server, a.cpu.bench].reduce<number>((t, x) => t + (x ?? 0), 0);
    console.log(`CPU during A (${a.result.secs.toFixed(2)} s wall, ${os.cpus().length} cores): worker ${f(a.cpu.worker)}, server ${f(a.cpu.server)}, writers ${f(a.cpu.bench)}: ${(busy / a.result.secs).toFixed(2)} cores busy; worker page faults ${a.cpu.workerFaults ?? '?'}`);
    // Fresh memory is a CPU cost of its own where first touches are dear: what each side paid for it.
    const faultSecs = (n: number | null | undefined) => (n === null || n === undefined ? '?' : `~${((n * touchUs) / 1e6).toFixed(2)} s`);
    console.log(`page faults (x ${touchUs.toFixed(1)} us): A's worker ${a.cpu.workerFaults ?? '?'} (${faultSecs(a.cpu.workerFaults)}), A's writers ${a.cpu.benchFaults ?? '?'} (${faultSecs(a.cpu.benchFaults)}), B1 ${b1.faults ?? '?'} (${faultSecs(b1.faults)})`);
    console.log(`worker CPU by thread: ${a.cpu.workerThreads.map(([name, s]) => `${name} ${s.toFixed(2)} s`).join(', ')}`);
    console.log(`worker page faults by thread: ${a.cpu.workerThreadFaults.map(([name, n]) => `${name} ${n}`).join(', ')}`);
    if (s3?.proxy) {
      const { connections, bytes } = s3.proxy.stats();
      console.log(`latency proxy: every request held ${S3_LATENCY_MS} ms; ${connections} connections, ${(bytes / 2 ** 20).toFixed(1)} MiB sent through it`);
    }
    console.log(`\ncontent check: ${ok ? 'PASS' : 'FAIL'}`);
    process.exitCode = ok ? 0 : 1;
  } finally {
    await s3?.server.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

(opt.direct ? directMain(opt.direct, String(opt['direct-root'])) : main()).catch((e: unknown) => {
  console.error(`merge-throughput: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  process.exitCode = 1;
});
