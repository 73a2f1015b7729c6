import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../activities';
import type { PreparedMerge } from '../activities/contract';
import { shardNames } from '../src/messages/names';
import { createTableMeta, sealGeneration } from '../src/storage/generation-store';
import { generationFile, tableLayout } from '../src/storage/layout';
import { withWorkerMalloc } from '../src/worker/allocator-env';
import { generateRows } from '../src/writer';
import { mib } from './support';

// The memory factor of a merge: peak RSS of one prepareMerge and of one
// commitMerge (the mergeInsert), each in a fresh process, over the bytes of the
// generation files it merges. Each measurement is VmHWM at the end minus VmRSS just
// before the activity (after loading every module a worker loads), so it is what the
// unit itself added. The base table holds `rows` rows already, as a running table does.
//
//   node --import tsx bench/memory-factor.ts [rows per unit, e.g. 50000,200000,500000]

const GENS = 4;
const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
const vm = (field: string): number => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0) * 1024;

async function child(step: string, root: string, arg: string): Promise<void> {
  await import('../src/storage/lance-table'); // the native module, as a worker has it loaded
  const acts = createActivities({ dataRoot: root });
  const env = new MockActivityEnvironment({}, { logger: quiet });
  globalThis.gc?.();
  const before = vm('VmRSS');
  const out = step === 'prepare'
    ? await env.run(acts.prepareMerge, JSON.parse(arg) as Parameters<typeof acts.prepareMerge>[0])
    : await env.run(acts.commitMerge, { table: 't', key: 'id', prepared: JSON.parse(arg) as PreparedMerge });
  process.stdout.write(JSON.stringify({ before, peak: vm('VmHWM'), out }) + '\n');
}

function measure(step: string, root: string, arg: unknown): { added: number; out: unknown } {
  // With a worker's malloc tunables: the reservations are for workers, which run with them.
  const r = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', __filename, '--child', step, root, JSON.stringify(arg)], { encoding: 'utf8', maxBuffer: 2 ** 24, env: withWorkerMalloc(process.env) });
  if (r.status !== 0) throw new Error(`${step} child failed: ${r.stderr}`);
  const m = JSON.parse(r.stdout.trim().split('\n').pop()!) as { before: number; peak: number; out: unknown };
  return { added: m.peak - m.before, out: m.out };
}

async function sealUnit(root: string, shards: string[], rows: number, seed: number): Promise<number> {
  let bytes = 0;
  for (let g = 0; g < GENS; g++) {
    const batch = generateRows({ keys: [0, rows * 2 - 1], count: Math.floor(rows / GENS), shard: 's0', shards, seed: seed + g });
    const s = await sealGeneration(root, 't', 's0', batch);
    bytes += fs.statSync(generationFile(tableLayout(root, 't'), 's0', s.seq)).size;
  }
  return bytes;
}

async function main(): Promise<void> {
  const sizes = (process.argv[2] ?? '50000,200000,500000').split(',').map(Number);
  console.log('| rows per unit | generation bytes | prepare peak added | factor | commit peak added | factor |');
  console.log('| --- | --- | --- | --- | --- | --- |');
  for (const rows of sizes) {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-memfactor-'));
    try {
      const shards = shardNames(1);
      await createTableMeta(root, { name: 't', key: 'id', shards, indices: [] });
      // A base table of about `rows` rows first, then the measured unit over it.
      await sealUnit(root, shards, rows, 1);
      const first = measure('prepare', root, { table: 't', key: 'id', shard: 's0', fromSeq: 1, toSeq: GENS });
      measure('commit', root, first.out);
      const bytes = await sealUnit(root, shards, rows, 100);
      const p = measure('prepare', root, { table: 't', key: 'id', shard: 's0', fromSeq: GENS + 1, toSeq: 2 * GENS });
      const c = measure('commit', root, p.out);
      const f = (n: number) => (n / bytes).toFixed(2);
      console.log(`| ${rows} | ${mib(bytes)} | ${mib(p.added)} | ${f(p.added)} | ${mib(c.added)} | ${f(c.added)} |`);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  }
}

const run = process.argv[2] === '--child' ? child(process.argv[3]!, process.argv[4]!, process.argv[5]!) : main();
run.catch((e: unknown) => {
  console.error(`memory-factor: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  process.exitCode = 1;
});
