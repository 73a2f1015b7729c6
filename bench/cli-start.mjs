#!/usr/bin/env node
// Wall time of one CLI command from process start to exit, run N times (default 5):
//   node bench/cli-start.mjs [--runs N] -- node scripts/turnstile.mjs status NAME
// Prints each run and the median, in ms. The command must succeed (exit 0); its
// output is discarded. See bench/README.md ("CLI start time").
import { spawnSync } from 'node:child_process';

const argv = process.argv.slice(2);
let runs = 5;
if (argv[0] === '--runs') {
  runs = Number(argv[1]);
  argv.splice(0, 2);
}
if (argv[0] === '--') argv.shift();
if (!argv.length || !Number.isInteger(runs) || runs < 1) {
  console.error('usage: node bench/cli-start.mjs [--runs N] -- COMMAND [ARGS...]');
  process.exit(2);
}

const times = [];
for (let i = 0; i < runs; i++) {
  const t = process.hrtime.bigint();
  const r = spawnSync(argv[0], argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  if (r.status !== 0) {
    console.error(`run ${i + 1}: exit ${r.status}: ${r.stderr.toString().trim()}`);
    process.exit(1);
  }
  times.push(ms);
}
const sorted = [...times].sort((a, b) => a - b);
const median = runs % 2 ? sorted[(runs - 1) / 2] : (sorted[runs / 2 - 1] + sorted[runs / 2]) / 2;
console.log(`${argv.join(' ')}: runs ${times.map((t) => t.toFixed(0)).join(', ')} ms; median ${median.toFixed(0)} ms`);
