// Small seals into a large table, through Turnstile end to end, two tables side by side
// on one worker: both are filled to --table-rows rows, then take --seals seals of
// --rows rows each, alternately (one merged before the next is sealed, so no two commits
// share the worker's CPU). Table K keeps the default index kind, so once it is large it
// gets a BTREE on its key (src/storage/merge-join.ts) and its commits look keys up; table
// S has the index kind off and scans. Prints each table's commit CPU (the commit
// activity's own measure), Lance call time and maintenance CPU (optimize, index) per
// seal, the ratio of all of it, the joins used, and a content check: each table holds
// exactly the newest row of every key written.
//
//   npx tsx bench/large-table-seals.ts [--table-rows 1000000] [--seals 30] [--rows 100]

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { ChildProcess } from 'node:child_process';
import type { CommitResult } from '../activities/contract';
import { connectClient } from '../src/client/connect';
import { MergeWaiter } from '../src/client/merge-waiter';
import { TableClient } from '../src/client/table-client';
import { TableWriter, workflowArgsFor } from '../src/client/table-writer';
import type { PolicyOverride } from '../src/config/policy-schema';
import { workflowIdForTable } from '../src/messages/names';
import { createTableMeta } from '../src/storage/generation-store';
import { openLanceTable } from '../src/storage/lance-table';
import { activityRuns } from '../test/support/history';
import { stat } from './phases';
import { benchServer, peakRssPerByte, startWorkerProcess, stopProcess } from './support';

const { values: opt } = parseArgs({ options: { 'table-rows': { type: 'string', default: '1000000' }, seals: { type: 'string', default: '30' }, rows: { type: 'string', default: '100' } } });
const whole = (name: 'table-rows' | 'seals' | 'rows', min: number): number => {
  const n = Number(opt[name]);
  if (!Number.isSafeInteger(n) || n < min) throw new Error(`--${name}: ${JSON.stringify(opt[name])} must be a whole number >= ${min}`);
  return n;
};
const TABLE_ROWS = whole('table-rows', 1);
const SEALS = whole('seals', 1);
const ROWS = whole('rows', 1);
const FILL_ROWS_PER_SEAL = 250_000;

interface Side {
  name: string;
  label: string;
  policy: PolicyOverride;
  writer?: TableWriter;
  /** key -> the value last written: the table must hold exactly these. */
  model: Map<number, string>;
  lastSeq: number;
}

const median = (xs: number[]): number => stat(xs).p50;

async function main(): Promise<void> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-bench-large-'));
  const root = path.join(tmp, 'data');
  const { address, server } = await benchServer(tmp);
  const client = await connectClient({ address, namespace: 'default' });
  let worker: ChildProcess | undefined;
  // Optimize on in both, as in production: it compacts the small fragments the seals leave and
  // folds their rows into K's index; without it every join reads more fragments each seal.
  const quiet = { optimize: 10, gc: 0 };
  const sides: Side[] = [
    { name: `large-k-${process.pid}`, label: 'K (key BTREE when large)', policy: { periodSecs: { ...quiet, index: 5 } }, model: new Map(), lastSeq: 0 },
    { name: `large-s-${process.pid}`, label: 'S (index kind off: scans)', policy: { periodSecs: { ...quiet, index: 0 } }, model: new Map(), lastSeq: 0 },
  ];
  try {
    const taskQueue = `bench-large-${process.pid}`;
    worker = await startWorkerProcess(address, taskQueue, root);
    const tables = new TableClient(client, taskQueue);
    const waiter = new MergeWaiter(client);
    for (const s of sides) {
      const meta = await createTableMeta(root, { name: s.name, key: 'id', shards: ['s0'], indices: [] });
      await tables.start({ ...workflowArgsFor(meta), policy: s.policy });
      s.writer = await TableWriter.open(tables, root, s.name);
    }
    let sealedBytes = 0;
    const seal = async (s: Side, from: number, count: number, tag: string) => {
      const rows = Array.from({ length: count }, (_, i) => ({ id: from + i, value: `${tag} ${from + i}` }));
      for (const r of rows) s.model.set(r.id, r.value);
      const sealed = await s.writer!.write('s0', rows);
      s.lastSeq = sealed.seq;
      sealedBytes += sealed.bytes;
      await waiter.wait(s.name, 's0', s.lastSeq);
    };
    const t0 = performance.now();
    for (let from = 0; from < TABLE_ROWS; from += FILL_ROWS_PER_SEAL) for (const s of sides) await seal(s, from, Math.min(FILL_ROWS_PER_SEAL, TABLE_ROWS - from), 'fill');
    console.log(`filled both tables to ${TABLE_ROWS.toLocaleString('en')} rows in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    // K's index kind builds the key's BTREE a period after the commit that found it missing.
    const deadline = Date.now() + 120_000;
    for (;;) {
      const tbl = await openLanceTable(root, sides[0]!.name);
      const built = (await tbl!.listIndices()).some((i) => i.columns.join() === 'id' && i.indexType.toLowerCase() === 'btree');
      tbl!.close();
      if (built || TABLE_ROWS < 250_000) break;
      if (Date.now() > deadline) throw new Error(`table K has no BTREE on its key 120 s after filling`);
      await new Promise((r) => setTimeout(r, 500));
    }
    // Half of each seal updates keys already in the table, half adds new ones.
    let next = TABLE_ROWS;
    const timedFromMs = Date.now();
    for (let i = 0; i < SEALS; i++) {
      const old = Math.floor((i * 7919 * ROWS) % Math.max(1, TABLE_ROWS - ROWS));
      for (const s of sides) {
        await seal(s, old, Math.ceil(ROWS / 2), `seal ${i}`);
        await seal(s, next, Math.floor(ROWS / 2), `seal ${i}`);
      }
      next += Math.floor(ROWS / 2);
    }

    console.log(`${SEALS} rounds of ${ROWS} rows (two seals each: updates, then new keys) into tables of ${TABLE_ROWS.toLocaleString('en')} rows, ${os.cpus().length} cores`);
    console.log('| table | commits | join | commit CPU p50 (ms) | Lance call p50 (ms) | commit activity p50 (ms) | maintenance CPU per seal (ms) | CPU per seal, all (ms) |');
    console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
    const total: number[] = [];
    for (const s of sides) {
      const runs = (await activityRuns(tables.handle(s.name))).filter((r) => r.outcome === 'completed' && r.scheduledAtMs >= timedFromMs);
      const commits = runs.filter((r) => r.type === 'commitMerge');
      const results = commits.map((r) => r.result as CommitResult);
      const joins = [...new Set(results.map((r) => r.join ?? 'scan'))].join(', ');
      const cpu = results.map((r) => r.cost?.cpuMs ?? NaN);
      // Optimize (and K's index folding in it) riding the commits or on its own, index plans and builds.
      const riding = results.reduce((n, r) => n + (r.maintained?.optimize?.cost?.cpuMs ?? 0) + (r.maintained?.gc?.cost?.cpuMs ?? 0), 0);
      const own = runs.filter((r) => r.type !== 'commitMerge').reduce((n, r) => n + ((r.result as { cost?: { cpuMs: number } } | undefined)?.cost?.cpuMs ?? 0), 0);
      const seals = commits.length || 1;
      const all = (cpu.reduce((n, c) => n + c, 0) + riding + own) / seals;
      total.push(all);
      console.log(`| ${s.label} | ${commits.length} | ${joins} | ${median(cpu).toFixed(1)} | ${median(results.map((r) => r.lanceMs ?? NaN)).toFixed(1)} | ${median(commits.map((r) => (r.closedAtMs ?? 0) - (r.startedAtMs ?? 0))).toFixed(1)} | ${((riding + own) / seals).toFixed(1)} | ${all.toFixed(1)} |`);
    }
    console.log(`CPU per seal with maintenance, S / K: ${(total[1]! / total[0]!).toFixed(2)}x`);
    // One merged before the next is sealed: at most one generation is in flight at a time.
    console.log(`worker (fill and seals of both tables): ${peakRssPerByte(worker.pid!, sealedBytes)}`);

    let ok = true;
    for (const s of sides) {
      const tbl = await openLanceTable(root, s.name);
      const rows = (await tbl!.query().select(['id', 'value']).toArray()) as { id: bigint | number; value: string }[];
      tbl!.close();
      const wrong = rows.filter((r) => s.model.get(Number(r.id)) !== r.value).length;
      const exact = rows.length === s.model.size && wrong === 0;
      if (!exact) ok = false;
      console.log(`table ${s.label}: ${rows.length} rows for ${s.model.size} keys, ${wrong} not the newest${exact ? '' : ': MISMATCH'}`);
    }
    console.log(`content check: ${ok ? 'PASS' : 'FAIL'}`);
    if (!ok) process.exitCode = 1;
  } finally {
    for (const s of sides) {
      await s.writer?.close().catch(() => undefined);
      await client.workflow.getHandle(workflowIdForTable(s.name)).terminate('benchmark done').catch(() => undefined);
    }
    await stopProcess(worker);
    await client.connection.close();
    await server?.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

void main();
