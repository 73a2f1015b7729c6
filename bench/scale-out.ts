// Scale-out: merge throughput over N tables with 1, 2, 3 ... worker
// processes (`turnstile worker`, each with its memory budget). Every table's backlog is
// sealed before its workflow starts, so the clock measures merging only: from the
// workflows' start until every shard is merged. CPU seconds of the workers (and of the
// server, when it is our own) say where the cores went; on a 2-core machine the
// speed-up is capped by the cores, not by the workers.
//
//   npx tsx bench/scale-out.ts [--tables 8] [--generations 6] [--rows 20000] [--workers 1,2,3]

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { ChildProcess } from 'node:child_process';
import { connectClient } from '../src/client/connect';
import { MergeWaiter } from '../src/client/merge-waiter';
import { TableClient } from '../src/client/table-client';
import { workflowArgsFor } from '../src/client/table-writer';
import { shardNames } from '../src/messages/names';
import { createTableMeta, sealGeneration } from '../src/storage/generation-store';
import { generateRows } from '../src/writer';
import { benchServer, cpuSeconds, peakRssPerByte, startWorkerProcess, stopProcess } from './support';

const { values: opt } = parseArgs({
  options: {
    tables: { type: 'string', default: '8' },
    generations: { type: 'string', default: '6' },
    rows: { type: 'string', default: '20000' },
    workers: { type: 'string', default: '1,2,3' },
  },
});
const TABLES = Number(opt.tables);
const GENS = Number(opt.generations);
const ROWS = Number(opt.rows);
const COUNTS = opt.workers.split(',').map(Number);
const SHARDS = shardNames(2);

interface Result {
  workers: number;
  secs: number;
  rows: number;
  workerCpu: number;
  serverCpu: number | null;
  load: number;
  /** Per worker: its peak RSS against the generation bytes of the run. */
  rss: string[];
}

async function runWith(n: number, address: string, serverPid: number | null, dir: string): Promise<Result> {
  const root = path.join(dir, `w${n}`);
  const taskQueue = `scale-out-${n}-${process.pid}`;
  const workers: ChildProcess[] = [];
  const client = await connectClient({ address, namespace: 'default' });
  try {
    for (let i = 0; i < n; i++) workers.push(await startWorkerProcess(address, taskQueue, root));
    const tables = new TableClient(client, taskQueue);
    const metas = [];
    let rows = 0;
    let bytes = 0;
    for (let t = 0; t < TABLES; t++) {
      const meta = await createTableMeta(root, { name: `scale${n}w-${t}-${process.pid}`, key: 'id', shards: SHARDS, indices: [] });
      metas.push(meta);
      for (const shard of SHARDS) {
        for (let g = 0; g < GENS; g++) {
          const start = g * ROWS;
          bytes += (await sealGeneration(root, meta.name, shard, generateRows({ keys: [start, start + ROWS * SHARDS.length * 2], count: ROWS, shard, shards: SHARDS, seed: t * 100 + g }))).bytes;
          rows += ROWS;
        }
      }
    }
    const cpu0 = workers.map((w) => cpuSeconds(w.pid!) ?? 0);
    const server0 = serverPid === null ? null : cpuSeconds(serverPid);
    const t0 = performance.now();
    for (const meta of metas) await tables.start({ ...workflowArgsFor(meta), policy: { periodSecs: { optimize: 0, index: 0, gc: 0 } } });
    const waiter = new MergeWaiter(client);
    await Promise.all(metas.flatMap((m) => SHARDS.map((s) => waiter.wait(m.name, s, GENS))));
    const secs = (performance.now() - t0) / 1000;
    const workerCpu = workers.reduce((sum, w, i) => sum + (cpuSeconds(w.pid!) ?? 0) - cpu0[i]!, 0);
    const server1 = serverPid === null ? null : cpuSeconds(serverPid);
    const rss = workers.map((w) => peakRssPerByte(w.pid!, bytes));
    return { workers: n, secs, rows, workerCpu, serverCpu: server0 === null || server1 === null ? null : server1 - server0, load: os.loadavg()[0]!, rss };
  } finally {
    for (const w of workers) await stopProcess(w);
    await client.connection.close();
  }
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-scale-out-'));
  const { address, server } = await benchServer(dir);
  try {
    console.log(`${TABLES} tables x ${SHARDS.length} shards x ${GENS} generations of ${ROWS} rows; ${os.cpus().length} cores`);
    console.log('workers  merge secs  rows/s  speed-up  worker CPU s  (per wall s)  server CPU s  load (1 min)');
    let base: number | null = null;
    for (const n of COUNTS) {
      const r = await runWith(n, address, server?.pid ?? null, dir);
      const rate = r.rows / r.secs;
      base ??= rate;
      console.log(
        `${String(n).padStart(7)}  ${r.secs.toFixed(1).padStart(10)}  ${rate.toFixed(0).padStart(6)}  ${(rate / base).toFixed(2).padStart(7)}x  ${r.workerCpu.toFixed(1).padStart(12)}  ${(r.workerCpu / r.secs).toFixed(2).padStart(12)}  ${r.serverCpu === null ? 'n/a' : r.serverCpu.toFixed(1).padStart(12)}  ${r.load.toFixed(1)}`,
      );
      r.rss.forEach((line, i) => console.log(`         worker ${i + 1}: ${line}`));
    }
    console.log('every shard merged: PASS');
  } finally {
    await server?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(`scale-out: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  process.exitCode = 1;
});
