// Writer ceiling: how fast one writer can seal generations into one shard through the
// real writer path (TableWriter.write: pressure, seal, background demand signal, a live
// table workflow and worker), as a ratio to the raw durable write of the same Arrow IPC
// bytes: write a temp file, fsync, rename (the least any atomic durable file write
// costs), plus the variant that also fsyncs the directory (what makes the rename
// itself durable). Interleaved, one seal then one raw write, so noise hits both alike.
// The rate is a writer's steady one, so small generations get many seals (200: a
// 2,500-row seal's encode runs in JavaScript that V8 has not optimised yet for its first
// few dozen, while the raw write's bytes are ready-made); the ratio over the first 29
// timed seals is printed beside it ("cold").
//
//   npx tsx bench/writer-ceiling.ts [--generations 200,30] [--rows 2500,100000]
//   (--generations: one count for every size, or one per size of --rows)

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { connectClient } from '../src/client/connect';
import { TableClient } from '../src/client/table-client';
import { TableWriter, workflowArgsFor } from '../src/client/table-writer';
import { workflowIdForTable } from '../src/messages/names';
import { arrow, type ArrowTable } from '../src/storage/arrow';
import { fsyncDir } from '../src/storage/atomic-file';
import { createTableMeta } from '../src/storage/generation-store';
import { tableFromRows, withSeqColumn } from '../src/storage/records';
import { generateRows } from '../src/writer';
import { stat } from './phases';
import { benchServer, peakRssPerByte, startWorkerProcess, stopProcess } from './support';

const { values: opt } = parseArgs({ options: { generations: { type: 'string', default: '200,30' }, rows: { type: 'string', default: '2500,100000' } } });
const SIZES = String(opt.rows).split(',').map(Number);
const COUNTS = String(opt.generations).split(',').map(Number);
for (const n of [...COUNTS, ...SIZES]) if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--generations/--rows: ${n} is not a positive integer`);
if (COUNTS.length !== 1 && COUNTS.length !== SIZES.length) throw new Error(`--generations: ${COUNTS.length} counts for ${SIZES.length} sizes of --rows; give one count, or one per size`);
/** Seals of each size: the first is not timed (see below), so at least 2. */
const generationsOf = (i: number): number => Math.max(2, COUNTS.length === 1 ? COUNTS[0]! : COUNTS[i]!);
/** Timed seals that count as cold (the "cold" column). */
const COLD = 29;

async function rawWrite(file: string, bytes: Uint8Array, dirSync: boolean): Promise<void> {
  const tmp = `${file}.tmp`;
  const h = await fs.promises.open(tmp, 'wx');
  try {
    await h.writeFile(bytes);
    await h.sync();
  } finally {
    await h.close();
  }
  await fs.promises.rename(tmp, file);
  if (dirSync) await fsyncDir(path.dirname(file));
}

async function main(): Promise<void> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-bench-writer-'));
  const { address, server } = await benchServer(tmp);
  const client = await connectClient({ address, namespace: 'default' });
  const taskQueue = `bench-writer-${process.pid}`;
  const root = path.join(tmp, 'data');
  const worker = await startWorkerProcess(address, taskQueue, root);
  const tables = new TableClient(client, taskQueue);
  console.log(`writer ceiling: ${SIZES.map((rows, i) => `${generationsOf(i)} seals of ${rows} rows`).join(', ')} into one shard, ${os.cpus().length} cores`);
  console.log(`${'rows/gen'.padStart(8)}  ${'seals'.padStart(5)}  ${'MiB/gen'.padStart(7)}  ${'seal p50 ms'.padStart(11)}  ${'raw p50 ms'.padStart(10)}  ${'raw+dir p50'.padStart(11)}  ${'seals/s'.padStart(7)}  ${'raw/s'.padStart(6)}  ${'ratio'.padStart(5)}  ${'ratio vs raw+dir'.padStart(16)}  ${'cold'.padStart(4)}  signals`);
  let sealedBytes = 0;
  try {
    for (const [i, rows] of SIZES.entries()) {
      const GENERATIONS = generationsOf(i);
      const table = `ceiling-${rows}-${process.pid}`;
      const meta = await createTableMeta(root, { name: table, key: 'id', shards: ['s0'], indices: [] });
      await tables.start(workflowArgsFor(meta));
      const writer = await TableWriter.open(tables, root, table);
      const gens: ArrowTable[] = Array.from({ length: GENERATIONS }, (_, g) => tableFromRows(generateRows({ keys: [g * rows, g * rows + 2 * rows], count: rows, shard: 's0', shards: ['s0'], seed: g + 1 }), 'id'));
      const rawDir = path.join(tmp, `raw-${rows}`);
      fs.mkdirSync(rawDir);
      const seal: number[] = [];
      const raw: number[] = [];
      const rawDirSync: number[] = [];
      let bytes = 0;
      // The first seal asks for pressure and creates the schema, and its demand is the
      // process's first signal-with-start (~10 ms of the client's main thread, measured,
      // which lands on the next seal): one-time costs, not the steady rate; not timed.
      await writer.write('s0', gens[0]!);
      await writer.flush();
      for (let g = 1; g < GENERATIONS; g++) {
        // The same bytes a seal writes: the generation with its _seq column, as Arrow IPC.
        const ipc = arrow.tableToIPC(withSeqColumn(gens[g]!, g + 1, 'id'), 'file');
        bytes = ipc.byteLength;
        // The three writes take turns at going first: whatever runs after a seal (its
        // merge on the worker, the journal flushing its link) lands on the next write, so
        // a fixed order would charge it to one of them every time.
        const steps: Array<[number[], () => Promise<unknown>]> = [
          [seal, () => writer.write('s0', gens[g]!)],
          [raw, () => rawWrite(path.join(rawDir, `${g}.arrow`), ipc, false)],
          [rawDirSync, () => rawWrite(path.join(rawDir, `${g}-d.arrow`), ipc, true)],
        ];
        for (let i = 0; i < steps.length; i++) {
          const [into, run] = steps[(g + i) % steps.length]!;
          const t = performance.now();
          await run();
          into.push(performance.now() - t);
        }
      }
      const { signalError } = await writer.close();
      if (signalError) throw new Error(`demand signal failed: ${signalError}`);
      const s = stat(seal);
      const r = stat(raw);
      const rd = stat(rawDirSync);
      const rate = (x: typeof s) => (1000 * x.n) / x.sum;
      const cold = rate(stat(seal.slice(0, COLD))) / rate(stat(raw.slice(0, COLD)));
      console.log(
        `${String(rows).padStart(8)}  ${String(seal.length).padStart(5)}  ${(bytes / 2 ** 20).toFixed(2).padStart(7)}  ${s.p50.toFixed(2).padStart(11)}  ${r.p50.toFixed(2).padStart(10)}  ${rd.p50.toFixed(2).padStart(11)}  ${rate(s).toFixed(0).padStart(7)}  ${rate(r).toFixed(0).padStart(6)}  ${(rate(s) / rate(r)).toFixed(2).padStart(5)}  ${(rate(s) / rate(rd)).toFixed(2).padStart(16)}  ${cold.toFixed(2).padStart(4)}  ${writer.demand.signalsSent}`,
      );
      await client.workflow.getHandle(workflowIdForTable(table)).terminate('benchmark done').catch(() => undefined);
      sealedBytes += bytes * seal.length;
    }
    console.log(`worker (merging every seal as it came): ${peakRssPerByte(worker.pid!, sealedBytes)}`);
  } finally {
    await stopProcess(worker);
    await client.connection.close();
    await server?.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(`writer-ceiling: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  process.exitCode = 1;
});
