import { spawn } from 'node:child_process';
import path from 'node:path';
import { expect, inject, test } from 'vitest';
import { PROJECT_ROOT } from '../../src/util/project-paths';

// Benchmarks are not timed here; each runs once with tiny parameters against the
// suite's server so it cannot rot: it must finish, check its own results and print the
// report's lines. The numbers themselves are measured by hand (bench/README.md).

/** Runs a bench to its end (asynchronously: a blocked test worker misses vitest's own RPC deadlines). */
async function bench(file: string, args: string[]): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(PROJECT_ROOT, 'bench', file), ...args], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (out += b.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect(code, out).toBe(0);
  return out;
}

test('merge-throughput: A equals B1 row for row, and the phase report is printed', async () => {
  const out = await bench('merge-throughput.ts', ['--shards', '2', '--generations', '3', '--rows', '200', '--warm-up']);
  expect(out).toMatch(/content check: PASS/);
  expect(out).toMatch(/^A warm-up \(not timed\): [\d.]+ s, worker CPU [\d.?]+/m);
  expect(out).toMatch(/^B1 warm-up \(not timed\): [\d.]+ s$/m);
  expect(out).toMatch(/^A +Turnstile \(workflow\) +1200 +[\d.]+ +\d+ +[\d.]+x/m);
  for (const phase of ['seal (per generation', 'demand signal -> preparation started', 'commit: Lance mergeInsert', 'turn handoff', 'workflow task started -> completed']) expect(out).toContain(phase);
  expect(out).toMatch(/worker peak RSS [\d.]+ MiB for [\d.]+ MiB of generations merged/);
  expect(out).toMatch(/^first touch of a fresh 4 KiB page here: [\d.]+ us$/m);
  expect(out).toMatch(/^page faults \(x [\d.]+ us\): A's worker \d+ \(~[\d.]+ s\), A's writers \d+ \(~[\d.]+ s\), B1 \d+ \(~[\d.]+ s\)$/m);
  expect(out).toMatch(/^worker page faults by thread: .*\d/m);
  // B1 and B2 each in a process of its own: neither the bench's nor A's worker's.
  const pids = /^processes: bench and A's writers (\d+), A's worker (\d+), B1 (\d+), B2 (\d+)$/m.exec(out)?.slice(1);
  expect(pids).toHaveLength(4);
  expect(new Set(pids).size).toBe(4);
});

test('merge-throughput on S3 behind the latency proxy: every table in SeaweedFS, A equals B1', async () => {
  const out = await bench('merge-throughput.ts', ['--shards', '2', '--generations', '3', '--rows', '100', '--storage', 's3', '--s3-latency-ms', '5']);
  expect(out).toMatch(/storage s3:\/\/turnstile-bench\/bench$/m);
  expect(out).toMatch(/content check: PASS/);
  expect(out).toMatch(/^A +Turnstile \(workflow\) +600 +[\d.]+ +\d+ +[\d.]+x/m);
  // The writers, A's worker, B1 and B2 all reached SeaweedFS through the proxy.
  const proxied = /^latency proxy: every request held 5 ms; (\d+) connections, ([\d.]+) MiB sent through it$/m.exec(out);
  expect(proxied, out).not.toBeNull();
  expect(Number(proxied![1])).toBeGreaterThanOrEqual(4);
  expect(Number(proxied![2])).toBeGreaterThan(0);
}, 300_000);

test('writer-ceiling: seals and raw writes of the same bytes, side by side', async () => {
  const out = await bench('writer-ceiling.ts', ['--generations', '4,3', '--rows', '300,200']);
  // rows, timed seals (all but the first), MiB, three p50s, two rates, ratio, ratio vs raw+dir, cold, signals
  expect(out).toMatch(/^ +300 +3 +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+ +\d+ +\d+ +[\d.]+ +[\d.]+ +[\d.]+ +\d+$/m);
  expect(out).toMatch(/^ +200 +2 +[\d.]+ /m);
  expect(out).toMatch(/^worker \(merging every seal as it came\): peak RSS [\d.]+ MiB for [\d.]+ MiB of generations \([\d.]+x\)/m);
});

test('many-tables: every seal is merged and answered, no workflow task timeouts', async () => {
  const out = await bench('many-tables.ts', ['--tables', '3', '--idle', '2', '--idle-window-secs', '2', '--workers', '1', '--minutes', '0.1', '--warm-up-minutes', '0.05', '--interval-secs', '2']);
  expect(out).toMatch(/for 0\.1 min after a warm-up of 0\.05 min \(counted: the 0\.1 min only\)/);
  // 3 tables sealing every 2 s for the 6 s counted: 9 seals, the warm-up's 3 apart (a
  // loaded machine may start a seal due 0.33 s before the window after it began, or skip
  // one due 0.33 s before the end).
  const counted = /offered 9 seals, sealed (\d+), merged \1, not merged within 60 s after the end 0, failures 0/.exec(out);
  expect(counted, out).not.toBeNull();
  expect(Number(counted![1])).toBeGreaterThanOrEqual(8);
  expect(Number(counted![1])).toBeLessThanOrEqual(10);
  expect(out).toMatch(/timers by what they waited for \(started\/fired\/canceled per seal\):/);
  expect(out).toMatch(/workflow task timeouts 0, workflow task failures 0/);
  expect(out).toMatch(/^worker 1: CPU [\d.]+ s/m);
  expect(out).toMatch(/^worker 1: CPU .*, peak RSS [\d.]+ MiB for [\d.]+ MiB of generations \([\d.]+x\)/m);
  expect(out).toMatch(/^bench \(writers and their Temporal client\): CPU [\d.]+ s/m);
  expect(out).toMatch(/^workers' CPU per seal by thread \(ms\): .*node \(main\) [\d.]+/m);
  expect(out).toMatch(/the write call alone \(seal and pressure\), by minute \(p50\/p99 s\): 1: [\d.]+\/[\d.]+/);
  expect(out).toMatch(/mark waits \d+ \(mean [\d.]+ ms, max \d+ ms\)/);
  expect(out).toMatch(/eager activity tasks asked\/granted\/used \d+\/\d+\/\d+/);
  expect(out).toMatch(/^settled \(every table's first snapshot done\) [\d.]+ s after the last start$/m);
  expect(out).toMatch(/cores busy by minute \(server, workers and bench, of \d+\):/);
  expect(out).toMatch(/^idle window \(5 tables up, none written, \d+ s\): server [\d.]+ s CPU, workers [\d.]+ s; per table-hour: server [\d.]+ ms, workers [\d.]+ ms$/m);
  expect(out).toMatch(/^idle tables during the run: \d+ workflow tasks, \d+ history events \([\d.]+ tasks per idle table-hour\), [\d.]+% of all workflow tasks$/m);
});

test('wait-merged-fanout: every waiting process answers with the version of the commit', async () => {
  const out = await bench('wait-merged-fanout.ts', ['--processes', '3', '--settle-secs', '3']);
  expect(out).toMatch(/answered with the right version \(\d+\): 3\/3/);
  expect(out).toMatch(/commit done -> answer \(ms\): first -?\d+, p50 -?\d+, last -?\d+/);
  expect(out).toMatch(/^worker: peak RSS [\d.]+ MiB for [\d.]+ MiB of generations/m);
});

test('scale-out: every shard merged with 2 worker processes, CPU printed', async () => {
  const out = await bench('scale-out.ts', ['--tables', '2', '--generations', '2', '--rows', '100', '--workers', '2']);
  expect(out).toMatch(/^ +2 +[\d.]+ +\d+ +1\.00x +[\d.]+ +[\d.]+ +(n\/a|[\d.]+) +[\d.]+$/m);
  expect(out).toContain('every shard merged: PASS');
  expect(out).toMatch(/worker 2: peak RSS [\d.]+ MiB for [\d.]+ MiB of generations \([\d.]+x\)/);
}, 300_000);

test('memory-factor: peak RSS added by a prepare and a commit, in fresh processes', async () => {
  const out = await bench('memory-factor.ts', ['4000']);
  // Tiny units add less than the noise of a process's RSS: a difference may come out negative.
  expect(out).toMatch(/^\| 4000 \| [\d.]+ MiB \| -?[\d.]+ MiB \| -?[\d.]+ \| -?[\d.]+ MiB \| -?[\d.]+ \|$/m);
}, 300_000);

test('merge-join: both joins side by side, the choice judged, every key once', async () => {
  const out = await bench('merge-join.ts', ['--tables', '5000', '--batches', '50,1000', '--runs', '1']);
  expect(out).toMatch(/^\| 5,000 \| 50 \| [\d.]+ \/ [\d.]+ \| [\d.]+ \/ [\d.]+ \| [\d.]+x \| index \| (yes|no \(scan\)) \| [\d.]+ \|$/m);
  expect(out).toMatch(/^\| 5,000 \| 1,000 \| .* \| scan \| (yes|no \(index\)) \| [\d.]+ \|$/m);
  expect(out).toMatch(/content check: PASS/);
}, 300_000);

test('large-table-seals: a large table gets its key BTREE and both tables end exact', async () => {
  const out = await bench('large-table-seals.ts', ['--table-rows', '260000', '--seals', '2', '--rows', '10']);
  expect(out).toMatch(/^\| K \(key BTREE when large\) \| 4 \| index( \| [\d.]+){5} \|$/m);
  expect(out).toMatch(/^\| S \(index kind off: scans\) \| 4 \| scan( \| [\d.]+){5} \|$/m);
  expect(out).toMatch(/^CPU per seal with maintenance, S \/ K: [\d.]+x$/m);
  expect(out).toMatch(/^worker \(fill and seals of both tables\): peak RSS [\d.]+ MiB for [\d.]+ MiB of generations \([\d.]+x\)$/m);
  expect(out).toMatch(/content check: PASS/);
}, 300_000);

test('workflow-task-cost: both modes counted from the histories, the ratio printed', async () => {
  const out = await bench('workflow-task-cost.ts', ['--tables', '2', '--rounds', '3', '--pause-ms', '50']);
  // Each of the 2 tables took each of the 3 signals in a workflow task of its own or with another.
  for (const mode of ['stack traces on', 'stack traces off \\(default\\)']) expect(out).toMatch(new RegExp(`^${mode} +([2-9]|\\d{2,}) +[\\d.]+ +[\\d.]+ +\\d+ +\\d+$`, 'm'));
  expect(out).toMatch(/^CPU per workflow task, stack traces off \(default\) \/ stack traces on: [\d.]+x$/m);
  for (const mode of ['stack traces on', 'stack traces off \\(default\\)']) expect(out).toMatch(new RegExp(`^worker \\(${mode}\\): peak RSS [\\d.]+ MiB for 0\\.0 MiB of generations \\(none\\)$`, 'm'));
});

test('workflow-task-cost --compare watchdog: the worker without the sandbox watchdog serves its tables too', async () => {
  const out = await bench('workflow-task-cost.ts', ['--tables', '2', '--rounds', '3', '--pause-ms', '50', '--compare', 'watchdog']);
  for (const mode of ['watchdog \\(SDK default\\)', 'no watchdog \\(bench only\\)']) expect(out).toMatch(new RegExp(`^${mode} +([2-9]|\\d{2,}) +[\\d.]+ +[\\d.]+ +\\d+ +\\d+$`, 'm'));
  expect(out).toMatch(/^CPU per workflow task, no watchdog \(bench only\) \/ watchdog \(SDK default\): [\d.]+x$/m);
});

test('contention: each regime leaves exactly the rows its writers committed', async () => {
  // --rate: the writers carry the same rows in every regime instead of committing as fast
  // as they can, which took 87 s of machine CPU for this run against 48 s capped.
  const out = await bench('contention.ts', ['--writers', '2', '--minutes', '0.15', '--rate', '4', '--regimes', 'a,b,c', '--initial-rows', '500', '--batch', '50', '--optimize-every-secs', '3', '--retention-secs', '3', '--sample-secs', '1', '--point-queries', '20']);
  for (const r of ['a', 'b', 'c']) expect(out).toMatch(new RegExp(`^\\| ${r}: [^|]+ \\| 2 \\| \\d+ \\| [\\d.]+ \\| .* \\| PASS, 0 \\| \\d+ / \\d+ / \\d+ \\| \\d+ / \\d+ / \\d+ \\|`, 'm'));
  expect(out).toMatch(/^commits by operation \(from the transactions\): .*Update \d+/m);
  expect(out).toMatch(/^bytes handed to write calls \(wchar\): writers [\d.]+ MiB/m);
  expect(out.match(/^maintenance process \((optimizer|Turnstile worker)\) peak RSS: [\d.]+ MiB$/gm), 'a peak RSS for each regime').toHaveLength(3);
}, 300_000);
