import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../activities';
import { createTableMeta, sealGeneration } from '../src/storage/generation-store';
import { tableFromRows } from '../src/storage/records';
import { generateRows } from '../src/writer';
const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
async function main() {
  const ROWS = Number(process.argv[2] ?? 100000);
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'prof-large-'));
  await createTableMeta(root, { name: 't', key: 'id', shards: ['s0'], indices: [] });
  const acts = createActivities({ dataRoot: root });
  const env = new MockActivityEnvironment({}, { logger: quiet });
  const seal: number[] = [];
  for (let g = 0; g < 5; g++) {
    const t0 = performance.now();
    await sealGeneration(root, 't', 's0', tableFromRows(generateRows({ keys: [g * ROWS / 2, g * ROWS / 2 + 2 * ROWS], count: ROWS, shard: 's0', shards: ['s0'], seed: g + 1 }), 'id'));
    seal.push(performance.now() - t0);
  }
  console.log('seal ms', seal.map((x) => x.toFixed(1)).join(' '));
  for (const [a, b] of [[1, 1], [2, 3], [4, 5]]) {
    let t = performance.now();
    const p = await env.run(acts.prepareMerge, { table: 't', key: 'id', shard: 's0', fromSeq: a!, toSeq: b! });
    const pm = performance.now() - t;
    t = performance.now();
    await env.run(acts.commitMerge, { table: 't', key: 'id', prepared: p });
    console.log(`unit ${a}-${b}: prepare ${pm.toFixed(0)} ms ${JSON.stringify(p.timings)} commit ${(performance.now() - t).toFixed(0)} ms rows ${p.rows}`);
  }
}
main();
