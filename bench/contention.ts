// Outside writers and maintenance on one Lance table: what three ways of keeping the
// table healthy do to W writers that keep writing for M minutes. Per regime, on the same
// seeded data, a fresh table of --initial-rows rows (a BTREE on the key) gets W writer
// processes (bench/contention/writer.ts), each committing batches of new keys plus
// --update-share updates of its own earlier keys, and:
//
//   a  what users do today: a process calling optimize({cleanupOlderThan: now -
//      retention}) every --optimize-every-secs (bench/contention/optimizer.ts);
//   b  Turnstile adopting the table (`turnstile table adopt --policy` with the
//      retention, `mode active`): its workflow compacts, refreshes the index and prunes
//      in its write-turn, retrying what the writers' commits preempt;
//   c  the writers sealing through Turnstile's own writer (TableWriter, rows routed to
//      W shards) into a `turnstile table create` table instead of committing; its
//      workflow merges, compacts and prunes (same retention and optimize period as a).
//
// Every --sample-secs it records the table's fragment count (stats()) and version count
// (the manifests under _versions/), and reads each new version's transaction: which
// operation made it and the data files it added (bench/contention/table-watch.ts), so
// the bytes compaction committed are measured the same way in every regime. What a
// failed optimize wrote is mostly deleted again by Lance, so the work thrown away shows
// in the bytes the processes handed to write calls (/proc/PID/io wchar): the writers',
// and the maintenance's (a's optimizer, b's and c's worker). After the run: every
// writer's model is checked against the table (bench/contention/verify.ts: duplicates,
// missing, stale rows), and 1,000 point lookups by key are timed. In c a commit is a
// seal; its rows are in the table once merged (the drain after the writers stop is
// printed). --rate R caps every writer at R batches a second, so that all regimes carry
// the same rows; without it each writer goes as fast as its commits let it.
//
//   npx tsx bench/contention.ts --writers 1,4 --minutes 5 [--regimes a,b,c] [--update-share 0.2]
//        [--storage local|s3] [--initial-rows 20000] [--batch 200] [--rate 0] [--retention-secs 60]
//        [--optimize-every-secs 60] [--seed 1] [--keep]

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import * as lancedb from '@lancedb/lancedb';
import { PROJECT_ROOT } from '../src/util/project-paths';
import { isS3, joinLoc } from '../src/storage/location';
import { lanceStorageOptions } from '../src/storage/s3-env';
import { benchS3, benchServer, peakRssBytes, startWorkerProcess, stopProcess } from './support';
import { adoptedLocation } from '../src/storage/adopted-table';
import { KEY, KEY_STRIDE, openOutsideTable, type WriterModel } from '../test/support/outside-table';
import { makeBatch, pct, rng, writtenBytes, type WriterLogLine } from './contention/rows';
import { readWriterModel, verifyTable, type VerifyResult } from './contention/verify';
import { TableWatch, type WriteAccount } from './contention/table-watch';
import type { OptimizeLogLine } from './contention/optimizer';

const { values: opt } = parseArgs({
  options: {
    writers: { type: 'string', default: '4' },
    minutes: { type: 'string', default: '5' },
    'update-share': { type: 'string', default: '0.2' },
    rate: { type: 'string', default: '0' },
    regimes: { type: 'string', default: 'a,b,c' },
    storage: { type: 'string', default: 'local' },
    'initial-rows': { type: 'string', default: '20000' },
    batch: { type: 'string', default: '200' },
    'retention-secs': { type: 'string', default: '60' },
    'optimize-every-secs': { type: 'string', default: '60' },
    'sample-secs': { type: 'string', default: '5' },
    'point-queries': { type: 'string', default: '1000' },
    seed: { type: 'string', default: '1' },
    keep: { type: 'boolean', default: false },
  },
});
const num = (name: keyof typeof opt, min: number): number => {
  const n = Number(opt[name]);
  if (!Number.isFinite(n) || n < min) throw new Error(`--${name}: ${JSON.stringify(opt[name])} must be a number >= ${min}`);
  return n;
};
const WRITERS = String(opt.writers)
  .split(',')
  .map((w) => {
    const n = Number(w);
    if (!Number.isSafeInteger(n) || n < 1 || n > 64) throw new Error(`--writers: ${JSON.stringify(w)} is not an integer in [1, 64]`);
    return n;
  });
const REGIMES = String(opt.regimes).split(',');
for (const r of REGIMES) if (!['a', 'b', 'c'].includes(r)) throw new Error(`--regimes: ${JSON.stringify(r)} is not a regime; accepted: a, b, c`);
if (opt.storage !== 'local' && opt.storage !== 's3') throw new Error(`--storage: ${JSON.stringify(opt.storage)} is not valid; accepted: local, s3`);
const MINUTES = num('minutes', 0.05);
const UPDATE_SHARE = num('update-share', 0);
if (UPDATE_SHARE > 1) throw new Error(`--update-share: ${UPDATE_SHARE} must be in [0, 1]`);
const INITIAL_ROWS = Math.floor(num('initial-rows', 1));
if (INITIAL_ROWS >= KEY_STRIDE) throw new Error(`--initial-rows must be below ${KEY_STRIDE}`);
const BATCH = Math.floor(num('batch', 1));
/** Batches a second each writer offers; 0: each writer commits as fast as it can (closed loop). */
const RATE = num('rate', 0);
const RETENTION_SECS = num('retention-secs', 0);
const OPTIMIZE_EVERY_SECS = num('optimize-every-secs', 1);
const SAMPLE_MS = num('sample-secs', 0.5) * 1000;
const POINT_QUERIES = Math.floor(num('point-queries', 0));
const SEED = Math.floor(num('seed', 0));
/** How long after its --secs a writer may take to finish its last batch before it is told to stop. */
const WRITER_GRACE_MS = 120_000;
/** How long Turnstile may take to merge what was sealed (c), or to finish a turn in flight (b, c). */
const DRAIN_BOUND_MS = 300_000;

const REGIME_NAMES: Record<string, string> = {
  a: 'a: writers + optimize every 60 s',
  b: 'b: writers + Turnstile adopt (active)',
  c: 'c: writers seal through Turnstile',
};
const regimeName = (r: string) => REGIME_NAMES[r]!.replace('60 s', `${OPTIMIZE_EVERY_SECS} s`);

/** An error message without what differs between occurrences (versions, source locations), to count them by kind. */
const errorKind = (e: string): string =>
  e
    .replace(/,? ?\/\S+\.rs:\d+:\d+/g, '')
    .replace(/\s+Caused by:.*$/s, '')
    .replace(/\d+/g, 'N')
    .slice(0, 200);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A bound raced against the real wait: it must not keep the process alive once that wait is over. */
const bound = (ms: number) => new Promise((r) => setTimeout(r, ms).unref());
const mib = (b: number) => (b / 2 ** 20).toFixed(1);

interface Sample {
  /** Seconds since the writers started. */
  t: number;
  versions: number;
  fragments: number;
  smallFragments: number;
}

interface RunResult {
  regime: string;
  writers: number;
  secs: number;
  /** Epoch ms of the go, and of the last writer's exit. */
  startedAt: number;
  writersEndedAt: number;
  rows: number;
  commits: number;
  batchP50: number;
  batchP99: number;
  conflictRetries: number;
  failures: number;
  failureKinds: Map<string, number>;
  verify: VerifyResult;
  samples: Sample[];
  account: WriteAccount;
  /** What the maintenance itself reported. */
  maintenance: string;
  maintenanceOk: number;
  maintenanceFailed: number;
  /** Bytes handed to write calls during the run (wchar): by the writer processes, and by the maintenance's process (a's optimizer, b's and c's worker). */
  writersWrote: number | null;
  maintenanceWrote: number | null;
  /** Peak RSS (VmHWM) of the maintenance's process: a's optimizer, b's and c's worker. */
  maintenancePeakRss: number | null;
  /** Turnstile only: merges of what was sealed, after the writers stopped. */
  drainSecs: number | null;
  pointP50: number;
  pointP99: number;
}

/** A process of ours under tsx (writer or optimizer); resolves once it printed "ready". */
async function startChild(script: string, args: string[], env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(PROJECT_ROOT, 'bench', 'contention', script), ...args], {
    cwd: PROJECT_ROOT,
    env,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.includes('ready\n')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code} before it was ready: ${out}`)));
  });
  return child;
}

const exited = (c: ChildProcess): Promise<void> => (c.exitCode !== null || c.signalCode !== null ? Promise.resolve() : new Promise((r) => c.once('exit', () => r())));

/** A CLI command that has not answered in this long is stuck (a table nobody answers queries for): the run fails. */
const CLI_BOUND_MS = 60_000;

/** `turnstile ARGS` with the bench's server, data root and task queue. */
async function turnstile(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'scripts', 'turnstile.mjs'), ...args], { cwd: PROJECT_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (err += b.toString()));
  const timer = setTimeout(() => child.kill('SIGTERM'), CLI_BOUND_MS);
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  clearTimeout(timer);
  if (code !== 0) throw new Error(`turnstile ${args.join(' ')} exited with ${code ?? `a signal after ${CLI_BOUND_MS / 1000} s`}: ${(err || out).trim()}`);
  return out;
}

interface TurnstileStatus {
  turn: unknown;
  version: number;
  counters: { turns: Record<string, number>; retries: number; stalls: number; commitConflicts?: number };
  shards: { shard: string; sealedThroughSeq: number; mergedThroughSeq: number }[];
}
const statusOf = async (name: string, env: NodeJS.ProcessEnv): Promise<TurnstileStatus> => JSON.parse(await turnstile(['status', name, '--json'], env)) as TurnstileStatus;

/** Waits until `done` holds for the table's status, or the bound passes; the last status. */
async function waitStatus(name: string, env: NodeJS.ProcessEnv, done: (s: TurnstileStatus) => boolean, boundMs: number): Promise<{ status: TurnstileStatus; ok: boolean }> {
  const until = Date.now() + boundMs;
  for (;;) {
    const status = await statusOf(name, env);
    if (done(status)) return { status, ok: true };
    if (Date.now() > until) return { status, ok: false };
    await sleep(1000);
  }
}

/** A fresh Lance table of the initial rows (writer 0, seq 0) with a BTREE on the key, as an outside application makes it. */
async function createOutsideTable(uri: string): Promise<void> {
  const { db, name } = adoptedLocation(uri);
  const conn = await lancedb.connect(db, isS3(uri) ? { storageOptions: lanceStorageOptions() } : {});
  const tbl = await conn.createTable(name, makeBatch(Array.from({ length: INITIAL_ROWS }, (_, i) => i), 0, 0));
  await tbl.createIndex(KEY, { config: lancedb.Index.btree() });
  tbl.close();
}

/** The Turnstile side of b and c: a server (one for the whole bench) and a worker per run. */
let stack: Promise<{ address: string; stop(): Promise<void> }> | null = null;
function turnstileServer(tmp: string): Promise<{ address: string; stop(): Promise<void> }> {
  stack ??= benchServer(tmp).then(({ address, server }) => ({ address, stop: async () => void (await server?.stop()) }));
  return stack;
}

function readLog<T>(file: string): T[] {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as T);
}

async function run(regime: string, writers: number, tmp: string, base: string): Promise<RunResult> {
  const tag = `${regime}-w${writers}`;
  const logs = path.join(tmp, tag);
  fs.mkdirSync(logs, { recursive: true });
  const children: ChildProcess[] = [];
  let worker: ChildProcess | undefined;
  let env: NodeJS.ProcessEnv = process.env;
  let uri: string;
  const name = `contention-${tag}`;
  const stopWorkflow: (() => Promise<void>)[] = [];
  try {
    // ---- the table, and the maintenance that will run beside the writers
    if (regime === 'a' || regime === 'b') {
      uri = joinLoc(base, `lake-${tag}`, 't.lance');
      await createOutsideTable(uri);
    } else uri = '';
    if (regime === 'b' || regime === 'c') {
      const { address } = await turnstileServer(tmp);
      const taskQueue = `bench-contention-${process.pid}-${tag}`;
      const root = joinLoc(base, `turnstile-${tag}`);
      worker = await startWorkerProcess(address, taskQueue, root);
      env = { ...process.env, TEMPORAL_ADDRESS: address, TURNSTILE_DATA: root, TURNSTILE_TASK_QUEUE: taskQueue };
      stopWorkflow.push(async () => {
        const { connectClient } = await import('../src/client/connect');
        const { workflowIdForTable } = await import('../src/messages/names');
        const client = await connectClient({ address, namespace: 'default' });
        await client.workflow.getHandle(workflowIdForTable(name)).terminate('benchmark done').catch(() => undefined);
        await client.connection.close();
      });
      const policyFile = path.join(logs, 'policy.json');
      if (regime === 'b') {
        fs.writeFileSync(policyFile, JSON.stringify({ retentionSecs: RETENTION_SECS }));
        await turnstile(['table', 'adopt', name, '--uri', uri, '--key', KEY, '--policy', policyFile], env);
        await turnstile(['mode', name, 'active'], env);
      } else {
        // The same retention and cadence as a's optimize (which also folds new rows into the index and prunes).
        fs.writeFileSync(policyFile, JSON.stringify({ retentionSecs: RETENTION_SECS, periodSecs: { optimize: OPTIMIZE_EVERY_SECS, index: OPTIMIZE_EVERY_SECS, gc: OPTIMIZE_EVERY_SECS } }));
        await turnstile(['table', 'create', name, '--key', KEY, '--shards', String(writers), '--indices', `${KEY}:btree`, '--policy', policyFile], env);
        uri = joinLoc(root, `${name}.lance`);
        await loadThroughTurnstile(name, env);
        // The BTREE the outside table of a and b starts with: built now, not at the index kind's first period.
        await turnstile(['bump', name, '--kind', 'index', '--class', '1', '--reason', 'bench: build the key index before the writers start'], env);
        if (!(await waitStatus(name, env, (st) => (st.counters.turns.index ?? 0) >= 1 && st.turn === null, DRAIN_BOUND_MS)).ok) throw new Error(`${name}: the key index was not built`);
      }
    }

    const watch = new TableWatch(uri);
    await watch.baseline();
    const tbl = await openOutsideTable(uri);

    // ---- writers (and a's optimizer), started together
    const writerArgs = (w: number) => [
      '--uri', uri, '--writer', String(w), '--secs', String(MINUTES * 60), '--log', path.join(logs, `writer-${w}.jsonl`),
      '--batch', String(BATCH), '--update-share', String(UPDATE_SHARE), '--rate', String(RATE), '--seed', String(SEED),
      ...(regime === 'c' ? ['--via', 'turnstile', '--table', name] : []),
    ];
    const ws = await Promise.all(Array.from({ length: writers }, (_, i) => startChild('writer.ts', writerArgs(i + 1), env)));
    children.push(...ws);
    let optimizer: ChildProcess | undefined;
    if (regime === 'a') {
      optimizer = await startChild('optimizer.ts', ['--uri', uri, '--log', path.join(logs, 'optimize.jsonl'), '--every', String(OPTIMIZE_EVERY_SECS), '--retention', String(RETENTION_SECS)], env);
      children.push(optimizer);
    }
    const samples: Sample[] = [];
    const workerWrote0 = worker ? writtenBytes(worker.pid!) : null;
    const t0 = Date.now();
    for (const c of children) c.stdin!.write('go\n');

    const sampleOnce = async () => {
      const versions = await watch.scan();
      const st = await tbl.stats();
      samples.push({ t: (Date.now() - t0) / 1000, versions, fragments: st.fragmentStats.numFragments, smallFragments: st.fragmentStats.numSmallFragments });
    };
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const next = t0 + (samples.length + 1) * SAMPLE_MS;
        await sleep(Math.max(0, next - Date.now()));
        if (sampling) await sampleOnce().catch((e: unknown) => console.error(`sample: ${(e as Error).message.split('\n')[0]}`));
      }
    })();

    // ---- the run: writers stop by themselves after --minutes
    const writersDone = Promise.all(ws.map(exited));
    const late = await Promise.race([writersDone.then(() => false), bound(MINUTES * 60_000 + WRITER_GRACE_MS).then(() => true)]);
    if (late) {
      console.log(`${tag}: a writer still runs ${WRITER_GRACE_MS / 1000} s after the end; SIGTERM`);
      for (const w of ws) w.kill('SIGTERM');
      await writersDone;
    }
    const writersEnd = Date.now();
    const summaries = ws.map((_, i) => readLog<WriterLogLine>(path.join(logs, `writer-${i + 1}.jsonl`)));

    // ---- stop the maintenance (c: after everything sealed is merged)
    let maintenance = '';
    let maintenanceOk = 0;
    let maintenanceFailed = 0;
    let drainSecs: number | null = null;
    let maintenanceWrote: number | null = null;
    let maintenancePeakRss: number | null = null;
    if (optimizer) {
      maintenancePeakRss = peakRssBytes(optimizer.pid!);
      optimizer.kill('SIGTERM');
      await exited(optimizer);
      const lines = readLog<OptimizeLogLine>(path.join(logs, 'optimize.jsonl'));
      const runs = lines.flatMap((l) => (l.type === 'run' ? [l] : []));
      maintenanceWrote = lines.flatMap((l) => (l.type === 'end' ? [l.wchar] : []))[0] ?? null;
      maintenanceOk = runs.filter((r) => r.ok).length;
      maintenanceFailed = runs.length - maintenanceOk;
      const sum = (f: (r: (typeof runs)[number]) => number) => runs.reduce((a, r) => a + f(r), 0);
      const errors = [...new Set(runs.filter((r) => !r.ok).map((r) => errorKind(r.error!)))];
      maintenance =
        `optimize runs ${runs.length}: ${maintenanceOk} ok, ${maintenanceFailed} failed; ms p50 ${pct(runs.map((r) => r.ms), 50).toFixed(0)} max ${Math.max(0, ...runs.map((r) => r.ms)).toFixed(0)}; ` +
        `compaction fragments removed/added ${sum((r) => r.compaction?.fragmentsRemoved ?? 0)}/${sum((r) => r.compaction?.fragmentsAdded ?? 0)}, files removed/added ${sum((r) => r.compaction?.filesRemoved ?? 0)}/${sum((r) => r.compaction?.filesAdded ?? 0)}; ` +
        `prune: ${sum((r) => r.prune?.oldVersionsRemoved ?? 0)} versions, ${mib(sum((r) => r.prune?.bytesRemoved ?? 0))} MiB` +
        (errors.length ? `; errors: ${errors.join(' | ')}` : '');
    }
    if (regime === 'c') {
      const last = new Map<string, number>();
      for (const s of summaries) {
        const sum = s[s.length - 1];
        if (sum?.type !== 'summary') continue;
        for (const [shard, seq] of Object.entries(sum.lastSeqs ?? {})) last.set(shard, Math.max(last.get(shard) ?? 0, seq));
      }
      const merged = await waitStatus(name, env, (st) => st.shards.every((sh) => sh.mergedThroughSeq >= (last.get(sh.shard) ?? 0)), DRAIN_BOUND_MS);
      drainSecs = (Date.now() - writersEnd) / 1000;
      if (!merged.ok) console.log(`${tag}: not everything sealed was merged ${DRAIN_BOUND_MS / 1000} s after the writers stopped`);
      await turnstile(['pause', name], env);
    }
    if (regime === 'b') await turnstile(['mode', name, 'shadow'], env);
    if (regime === 'b' || regime === 'c') {
      const { status, ok } = await waitStatus(name, env, (st) => st.turn === null, DRAIN_BOUND_MS);
      const c = status.counters;
      const w1 = writtenBytes(worker!.pid!);
      maintenancePeakRss = peakRssBytes(worker!.pid!);
      maintenanceWrote = w1 !== null && workerWrote0 !== null ? w1 - workerWrote0 : null;
      maintenanceOk = (c.turns.optimize ?? 0) + (c.turns.index ?? 0) + (c.turns.gc ?? 0);
      maintenanceFailed = c.retries;
      maintenance =
        `Turnstile turns: ${Object.entries(c.turns).map(([k, n]) => `${k} ${n}`).join(', ')}; retries ${c.retries}, stalls ${c.stalls}` +
        (c.commitConflicts !== undefined ? `, commit conflicts ${c.commitConflicts}` : '') +
        (ok ? '' : '; a turn was still held when the bench stopped waiting');
    }
    sampling = false;
    await sampler;
    await sampleOnce();

    // ---- check the table against the writers' models, then time point lookups
    const models = ws.map((_, i) => readWriterModel(path.join(logs, `writer-${i + 1}.jsonl`))).filter((m): m is WriterModel => m !== null);
    if (models.length < writers) console.log(`${tag}: ${writers - models.length} writer(s) wrote no summary; their keys are not checked`);
    const fresh = await openOutsideTable(uri);
    const verify = await verifyTable(fresh, models, INITIAL_ROWS);
    const { p50: pointP50, p99: pointP99 } = await pointLookups(fresh, models);
    fresh.close();
    tbl.close();

    // ---- the writers' side
    const lines = summaries.flat();
    const batchMs = lines.flatMap((l) => (l.type === 'commit' ? [l.batchMs] : []));
    const failureKinds = new Map<string, number>();
    for (const l of lines) {
      if (l.type !== 'failure') continue;
      const kind = errorKind(l.error);
      failureKinds.set(kind, (failureKinds.get(kind) ?? 0) + 1);
    }
    const sums = lines.flatMap((l) => (l.type === 'summary' ? [l] : []));
    const secs = sums.length ? (Math.max(...sums.map((s) => s.endedAt)) - Math.min(...sums.map((s) => s.startedAt))) / 1000 : MINUTES * 60;
    return {
      regime,
      writers,
      secs,
      startedAt: t0,
      writersEndedAt: writersEnd,
      rows: sums.reduce((a, s) => a + s.rows, 0),
      commits: sums.reduce((a, s) => a + s.commits, 0),
      batchP50: pct(batchMs, 50),
      batchP99: pct(batchMs, 99),
      conflictRetries: sums.reduce((a, s) => a + s.conflictRetries, 0),
      failures: sums.reduce((a, s) => a + s.failures, 0),
      failureKinds,
      verify,
      samples,
      account: watch.account(),
      maintenance,
      maintenanceOk,
      maintenanceFailed,
      writersWrote: sums.some((x) => x.wchar === null) ? null : sums.reduce((a, x) => a + x.wchar!, 0),
      maintenanceWrote,
      maintenancePeakRss,
      drainSecs,
      pointP50,
      pointP99,
    };
  } finally {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
    await Promise.all(children.map(exited));
    for (const s of stopWorkflow) await s().catch(() => undefined);
    await stopProcess(worker);
  }

  /** c's initial rows: sealed through Turnstile (routed to the shards) and merged before the writers start. */
  async function loadThroughTurnstile(table: string, e: NodeJS.ProcessEnv): Promise<void> {
    const { connectClient } = await import('../src/client/connect');
    const { TableClient } = await import('../src/client/table-client');
    const { TableWriter } = await import('../src/client/table-writer');
    const { MergeWaiter } = await import('../src/client/merge-waiter');
    const client = await connectClient({ address: e.TEMPORAL_ADDRESS!, namespace: 'default' });
    try {
      const w = await TableWriter.open(new TableClient(client, e.TURNSTILE_TASK_QUEUE!), e.TURNSTILE_DATA!, table);
      const sealed = await w.writeRouted(makeBatch(Array.from({ length: INITIAL_ROWS }, (_, i) => i), 0, 0));
      await w.close();
      const waiter = new MergeWaiter(client);
      const merged = Promise.all(sealed.map((s) => waiter.wait(table, s.shard, s.seq))).then(() => true);
      if (!(await Promise.race([merged, bound(DRAIN_BOUND_MS).then(() => false)]))) throw new Error(`${table}: the initial rows were not merged within ${DRAIN_BOUND_MS / 1000} s`);
    } finally {
      await client.connection.close();
    }
  }
}

/** POINT_QUERIES lookups of one key each, keys drawn from every model, one after another. */
async function pointLookups(tbl: lancedb.Table, models: readonly WriterModel[]): Promise<{ p50: number; p99: number }> {
  const random = rng(SEED + 17);
  const keys: number[] = [];
  const total = INITIAL_ROWS + models.reduce((a, m) => a + m.seqs.length, 0);
  for (let i = 0; i < POINT_QUERIES; i++) {
    let r = Math.floor(random() * total);
    if (r < INITIAL_ROWS) {
      keys.push(r);
      continue;
    }
    r -= INITIAL_ROWS;
    for (const m of models) {
      if (r < m.seqs.length) {
        keys.push(m.keyBase + r);
        break;
      }
      r -= m.seqs.length;
    }
  }
  const ms: number[] = [];
  let misses = 0;
  for (const k of keys) {
    const t = performance.now();
    const rows = await tbl.query().where(`${KEY} = ${k}`).select([KEY, 'wseq']).toArray();
    ms.push(performance.now() - t);
    if (rows.length !== 1) misses++;
  }
  if (misses) console.log(`point lookups: ${misses} of ${keys.length} did not find exactly one row`);
  return { p50: pct(ms, 50), p99: pct(ms, 99) };
}

/** The last sample taken before the last writer exited: the table as the writers left it, before the maintenance was stopped. */
const atStop = (r: RunResult, pick: (s: Sample) => number): number => {
  const before = r.samples.filter((s) => r.startedAt + s.t * 1000 <= r.writersEndedAt);
  return before.length ? pick(before[before.length - 1]!) : NaN;
};

function report(r: RunResult): void {
  console.log(`\n== ${regimeName(r.regime)}, ${r.writers} writer(s), ${r.secs.toFixed(0)} s`);
  console.log(`writers: ${r.rows} rows in ${r.commits} ${r.regime === 'c' ? 'seals' : 'commits'} (${(r.rows / r.secs).toFixed(0)} rows/s, ${(r.commits / r.secs).toFixed(2)}/s); batch latency p50 ${r.batchP50.toFixed(0)} ms, p99 ${r.batchP99.toFixed(0)} ms; lancedb conflict retries ${r.conflictRetries}; failed attempts ${r.failures}`);
  for (const [k, n] of r.failureKinds) console.log(`  failed ${n}x: ${k}`);
  if (r.drainSecs !== null) console.log(`merged everything sealed ${r.drainSecs.toFixed(1)} s after the writers stopped`);
  console.log(`maintenance: ${r.maintenance}`);
  const v = r.verify;
  console.log(`verify: ${v.ok ? 'PASS' : 'FAIL'}: ${v.rows} rows for ${v.expected} keys; duplicate keys ${v.duplicateKeys} (${v.duplicateRows} extra rows), missing ${v.missing}, stale or wrong ${v.wrong}, unaccounted ${v.extra}, pending ${v.pendingKeys}`);
  for (const e of v.examples) console.log(`  ${e}`);
  const f = r.samples.map((s) => s.fragments);
  const vs = r.samples.map((s) => s.versions);
  const byMinute = (pick: (s: Sample) => number) => {
    const out: number[] = [];
    // The writers' minutes only; the samples after they stopped are the "at end" ones.
    const last = Math.max(0, Math.round(r.secs / 60) - 1);
    for (const s of r.samples.filter((x) => x.t <= r.secs)) {
      const m = Math.min(last, Math.floor(s.t / 60));
      out[m] = Math.max(out[m] ?? 0, pick(s));
    }
    return out.map((x, i) => `${i + 1}: ${x ?? '-'}`).join('  ');
  };
  console.log(`fragments: max ${Math.max(...f)}, when the writers stopped ${atStop(r, (s) => s.fragments)}, at end ${f[f.length - 1]}; max by minute ${byMinute((s) => s.fragments)}`);
  console.log(`versions: max ${Math.max(...vs)}, when the writers stopped ${atStop(r, (s) => s.versions)}, at end ${vs[vs.length - 1]}; max by minute ${byMinute((s) => s.versions)}`);
  const a = r.account;
  const at = (ms: number) => `${((ms - r.startedAt) / 1000).toFixed(0)} s${ms > r.writersEndedAt ? ' (writers stopped)' : ''}`;
  console.log(`compactions (Rewrite commits) seen at: ${a.rewrites.length ? a.rewrites.map((x) => `${at(x.seenAt)}: ${x.rows} rows`).join(', ') : 'none'}`);
  const ops = Object.entries(a.byOp).map(([op, o]) => `${op} ${o.commits} (${mib(o.bytes)} MiB, ${o.rows} rows)`).join(', ');
  console.log(`commits by operation (from the transactions): ${ops}`);
  console.log(`data files created ${a.createdFiles} (${mib(a.createdBytes)} MiB), of them in no committed version ${a.orphanFiles} (${mib(a.orphanBytes)} MiB)${a.unread ? `; ${a.unread} manifests or transactions pruned before they were read` : ''}`);
  const w = (b: number | null) => (b === null ? 'unknown' : `${mib(b)} MiB`);
  const maintainer = `maintenance process (${r.regime === 'a' ? 'optimizer' : 'Turnstile worker'})`;
  console.log(`bytes handed to write calls (wchar): writers ${w(r.writersWrote)}, ${maintainer} ${w(r.maintenanceWrote)}`);
  console.log(`${maintainer} peak RSS: ${r.maintenancePeakRss === null ? '?' : `${mib(r.maintenancePeakRss)} MiB`}`);
  console.log(`point lookups (${POINT_QUERIES}): p50 ${r.pointP50.toFixed(1)} ms, p99 ${r.pointP99.toFixed(1)} ms`);
}

function table(results: RunResult[], command: string): string {
  const rows = results.map((r) => {
    const f = r.samples.map((s) => s.fragments);
    const vs = r.samples.map((s) => s.versions);
    const rewrite = r.account.byOp.Rewrite?.bytes ?? 0;
    return [
      regimeName(r.regime),
      String(r.writers),
      (r.rows / r.secs).toFixed(0),
      (r.commits / r.secs).toFixed(2),
      `${r.batchP50.toFixed(0)} / ${r.batchP99.toFixed(0)}`,
      String(r.conflictRetries),
      String(r.failures),
      `${r.verify.ok ? 'PASS' : 'FAIL'}, ${r.verify.duplicateKeys}`,
      `${Math.max(...f)} / ${atStop(r, (s) => s.fragments)} / ${f[f.length - 1]}`,
      `${Math.max(...vs)} / ${atStop(r, (s) => s.versions)} / ${vs[vs.length - 1]}`,
      `${r.maintenanceOk} / ${r.maintenanceFailed}`,
      `${r.account.rewrites.length} (${mib(rewrite)} MiB)`,
      r.maintenanceWrote === null ? '?' : mib(r.maintenanceWrote),
      r.maintenancePeakRss === null ? '?' : mib(r.maintenancePeakRss),
      `${r.pointP50.toFixed(1)} / ${r.pointP99.toFixed(1)}`,
    ];
  });
  const head = [
    'regime', 'writers', 'rows/s', 'commits/s', 'batch p50 / p99 ms', 'lancedb retries', 'failed attempts', 'verify, duplicate keys',
    'fragments max / writers stop / end', 'versions max / writers stop / end', 'maintenance runs ok / failed (b, c: turns / retries)', 'compactions committed', 'MiB the maintenance wrote', 'maintenance process peak RSS MiB', 'point lookup p50 / p99 ms',
  ];
  return [
    `\`${command}\`, ${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} cores`,
    '',
    `| ${head.join(' | ')} |`,
    `| ${head.map(() => '---').join(' | ')} |`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}

async function main(): Promise<void> {
  const command = `npx tsx bench/contention.ts ${process.argv.slice(2).join(' ')}`.trim();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-bench-contention-'));
  let s3: Awaited<ReturnType<typeof benchS3>> | undefined;
  const results: RunResult[] = [];
  console.log(`contention: writers ${WRITERS.join(',')}, ${MINUTES} min per run, regimes ${REGIMES.join(',')}, batch ${BATCH} rows (${UPDATE_SHARE} updates) ${RATE > 0 ? `at most ${RATE}/s per writer` : 'as fast as each writer can'}, ${INITIAL_ROWS} initial rows, retention ${RETENTION_SECS} s, ${opt.storage}; ${os.cpus().length} cores, load ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}; files under ${tmp}`);
  try {
    if (opt.storage === 's3') s3 = await benchS3(tmp);
    const base = s3 ? s3.root : tmp;
    for (const w of WRITERS) {
      for (const regime of REGIMES) {
        try {
          const r = await run(regime, w, tmp, base);
          results.push(r);
          report(r);
        } catch (e) {
          console.log(`\n== ${regimeName(regime)}, ${w} writer(s): FAILED: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
          process.exitCode = 1;
        }
      }
    }
    if (results.length) console.log(`\n${table(results, command)}`);
    if (results.some((r) => !r.verify.ok)) process.exitCode = 1;
  } finally {
    if (stack) await (await stack).stop();
    await s3?.server.stop();
    if (!opt.keep) fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(`contention: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  process.exitCode = 1;
});
