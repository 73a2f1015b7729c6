import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTableMeta, sealGeneration } from '../../src/storage/generation-store';
import { tableFromRows } from '../../src/storage/records';
import { generateRows } from '../../src/writer';
import { shardNames } from '../../src/names';
const SHARDS = shardNames(2);
const ROWS = 100_000;
const WINDOW = (2 * ROWS + 64) * SHARDS.length;
const STEP = Math.floor(WINDOW / 4);
async function main() {
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'sealprof-'));
const meta = await createTableMeta(root, { name: 't', key: 'id', shards: SHARDS, indices: [] });
const gens = [];
for (let g = 0; g < 10; g++) for (const s of SHARDS) gens.push([s, tableFromRows(generateRows({ keys: [g * STEP, g * STEP + WINDOW - 1], count: ROWS, shard: s, shards: SHARDS, seed: g + 1 }), 'id')] as const);
for (let rep = 0; rep < 2; rep++) {
  const c0 = process.cpuUsage(); const t0 = performance.now();
  for (const [s, t] of gens.slice(rep * 10, rep * 10 + 10)) await sealGeneration(root, 't', s, t, { meta });
  const c = process.cpuUsage(c0);
  console.log(`rep ${rep}: 10 seals ${(performance.now() - t0).toFixed(0)} ms wall, ${((c.user + c.system) / 1000).toFixed(0)} ms CPU (user ${(c.user/1000).toFixed(0)} sys ${(c.system/1000).toFixed(0)})`);
}
fs.rmSync(root, { recursive: true, force: true });
}
void main();
