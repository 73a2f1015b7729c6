#!/usr/bin/env node
// Wall time of one CLI command from process start to exit, run N times (default 5):
//   node bench/cli-start.mjs [--runs N] -- node scripts/turnstile.mjs status NAME
// Prints each run and the medians of wall time and, on Linux, CPU time (user + system
// of the command and its children, from /proc/self/stat), in ms: on a shared machine
// the CPU time moves less with the load than the wall time does. The command must
// succeed (exit 0); its output is discarded. See bench/README.md ("CLI start time").
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

/** CPU ms of this process's waited-for children (cutime + cstime, in clock ticks of 10 ms), or null off Linux. */
function childrenCpuMs() {
  try {
    const fields = fs.readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
    return (Number(fields[13]) + Number(fields[14])) * 10;
  } catch {
    return null;
  }
}

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
const cpu = [];
for (let i = 0; i < runs; i++) {
  const c = childrenCpuMs();
  const t = process.hrtime.bigint();
  const r = spawnSync(argv[0], argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  if (r.status !== 0) {
    console.error(`run ${i + 1}: exit ${r.status}: ${r.stderr.toString().trim()}`);
    process.exit(1);
  }
  times.push(ms);
  if (c !== null) cpu.push(childrenCpuMs() - c);
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const cpuText = cpu.length ? `; cpu ${cpu.join(', ')} ms, median ${median(cpu).toFixed(0)} ms` : '';
console.log(`${argv.join(' ')}: wall ${times.map((t) => t.toFixed(0)).join(', ')} ms, median ${median(times).toFixed(0)} ms${cpuText}`);
