import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import * as lancedb from '@lancedb/lancedb';
import { arrow } from '../src/storage/arrow';
import { mergeJoin } from '../src/storage/merge-join';
import { stat } from './phases';

// The two joins of a merge's upsert side by side (src/storage/merge-join.ts): for each
// table size, a Lance table of that many rows with a BTREE on the key, then batches of
// each size upserted alternately through the index and by scan (Turnstile's conditional
// upsert: last writer by `_seq` wins), half of each batch's keys in the table and half
// new. Prints CPU (this process, Lance's threads included) and wall time per join, the
// scan/index CPU ratio, and which join mergeJoin chooses and whether it was the cheaper;
// beside them the CPU of appending as many new rows with no join at all, what the join
// costs over writing the rows.
// Ends with a content check: every key once, with its newest `_seq`.
//
//   npx tsx bench/merge-join.ts [--tables 20000,200000,2000000] [--batches 100,1000,10000,100000] [--runs 6]

const { values: opt } = parseArgs({ options: { tables: { type: 'string', default: '20000,200000,2000000' }, batches: { type: 'string', default: '100,1000,10000,100000' }, runs: { type: 'string', default: '6' } } });
const list = (name: 'tables' | 'batches'): number[] => {
  const ns = String(opt[name]).split(',').map(Number);
  if (ns.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--${name}: ${JSON.stringify(opt[name])} must be whole numbers >= 1, comma-separated`);
  return ns;
};
const TABLES = list('tables');
const BATCHES = list('batches');
const RUNS = Number(opt.runs);
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error(`--runs: ${JSON.stringify(opt.runs)} must be a whole number >= 1`);

const rows = (ids: readonly number[], seq: number) =>
  arrow.tableFromArrays({ id: BigInt64Array.from(ids, BigInt), value: ids.map((i) => `value ${i} at ${seq}`), _seq: BigInt64Array.from(ids, () => BigInt(seq)) });
const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);
const median = (xs: number[]): number => stat(xs).p50;

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-bench-join-'));
  const db = await lancedb.connect(dir);
  console.log(`merge join: index or scan, ${RUNS} runs of each, ${os.cpus().length} cores`);
  console.log('| table rows | batch rows | CPU index / scan (ms) | wall index / scan (ms) | scan / index CPU | chosen | cheaper | CPU of an append (ms) |');
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
  let seq = 1;
  let checked = true;
  for (const n of TABLES) {
    const tbl = await db.createTable(`t${n}`, rows(range(0, Math.min(n, 500_000)), seq));
    for (let from = 500_000; from < n; from += 500_000) await tbl.add(rows(range(from, Math.min(500_000, n - from)), seq));
    await tbl.createIndex('id', { config: lancedb.Index.btree() });
    let next = n; // keys from here on are new
    for (const b of BATCHES.filter((b) => b < n)) {
      const cpu = { index: [] as number[], scan: [] as number[], append: [] as number[] };
      const wall = { index: [] as number[], scan: [] as number[] };
      for (let r = 0; r < RUNS; r++) {
        for (const join of ['index', 'scan'] as const) {
          const old = Math.floor(Math.random() * (n - b / 2));
          const ids = [...range(old, Math.ceil(b / 2)), ...range(next, Math.floor(b / 2))];
          next += Math.floor(b / 2);
          const batch = rows(ids, ++seq);
          const c0 = process.cpuUsage();
          const t0 = performance.now();
          await tbl.mergeInsert('id').whenMatchedUpdateAll({ where: 'target._seq < source._seq' }).whenNotMatchedInsertAll().useIndex(join === 'index').execute(batch);
          wall[join].push(performance.now() - t0);
          const c = process.cpuUsage(c0);
          cpu[join].push((c.user + c.system) / 1000);
        }
        const fresh = rows(range(next, b), ++seq);
        next += b;
        const c0 = process.cpuUsage();
        await tbl.add(fresh);
        const c = process.cpuUsage(c0);
        cpu.append.push((c.user + c.system) / 1000);
      }
      const [ci, cs] = [median(cpu.index), median(cpu.scan)];
      const chosen = mergeJoin(b, await tbl.countRows(), true);
      const cheaper = ci <= cs ? 'index' : 'scan';
      console.log(`| ${n.toLocaleString('en')} | ${b.toLocaleString('en')} | ${ci.toFixed(1)} / ${cs.toFixed(1)} | ${median(wall.index).toFixed(1)} / ${median(wall.scan).toFixed(1)} | ${(cs / ci).toFixed(2)}x | ${chosen} | ${chosen === cheaper ? 'yes' : `no (${cheaper})`} | ${median(cpu.append).toFixed(1)} |`);
    }
    const count = await tbl.countRows();
    const distinct = (await tbl.query().select(['id']).toArray()).length;
    const dupes = count !== next || distinct !== next;
    if (dupes) checked = false;
    console.log(`  table of ${n.toLocaleString('en')}: ${count} rows, ${next} keys written${dupes ? ': MISMATCH' : ''}`);
  }
  console.log(`content check: ${checked ? 'PASS' : 'FAIL'}`);
  fs.rmSync(dir, { recursive: true, force: true });
  if (!checked) process.exitCode = 1;
}

void main();
