import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, expect, test } from 'vitest';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import { createTableMeta, sealGeneration } from '../../src/storage/generation-store';
import { workflowArgsFor } from '../../src/client/table-writer';
import { MergeWaiter } from '../../src/client/merge-waiter';
import { shardNames } from '../../src/messages/names';
import { liveRecords } from '../../src/worker/registry';
import { maxBatchBytes } from '../../activities/memory-reservations';
import { KEPT_BYTES_MAX } from '../../src/storage/scratch';
import { eventually, startHarness, uniqueName, type Harness } from '../support/harness';
import { expectRowsExactly } from '../support/expect-exact';
import { newestPerKey } from '../support/lance-read';
import { withWorkerMalloc } from '../../src/worker/allocator-env';
import { sleep } from '../../src/util/sleep';

// Admission by reserved bytes with real processes. Two `turnstile
// worker` processes with TURNSTILE_WORKER_MEMORY=1GiB merge 20 tables whose merge units
// reserve ~400 MiB each (34 MiB of generations, x10 + 64 MiB for the commit). Each
// worker's peak RSS (VmHWM, which the kernel tracks itself) must stay within its budget
// plus its baseline: the idle process before any merge, and the memory a worker keeps
// between merges for the next one (scratch.ts, at most KEPT_BYTES_MAX), which is outside
// the budget by design; one worker is SIGKILLed mid-run and the survivor finishes;
// every table ends exact, and its backlog was merged in more than one batch (3
// generations of ~17 MiB do not fit one batch of maxBatchBytes ~38.4 MiB).

const BUDGET = 2 ** 30;
const TABLES = 20;
const GENS = 3;
// Wide rows: ~17 MiB per generation in few values, so writing the data takes seconds.
const ROWS = 2_000;
const PAD = 'x'.repeat(8500);

let h: Harness;
const workers: ChildProcess[] = [];
beforeAll(async () => {
  h = await startHarness({ name: 'fleet', workers: 0 });
});
/** Kills every worker still running, and waits for each to exit. */
async function killWorkers(): Promise<void> {
  await Promise.all(
    workers.filter((w) => w.exitCode === null && w.signalCode === null).map(async (w) => {
      const exited = new Promise((r) => w.once('exit', r));
      w.kill('SIGKILL');
      await exited;
    }),
  );
}
afterAll(async () => {
  await killWorkers();
  await h?.close();
});
// Each test counts on its own workers alone: one left from an earlier test polls the
// same task queue and can take every unit (CI saw the SIGTERM test's second worker get
// none while the first test's survivor still ran).
beforeEach(killWorkers);

const vm = (pid: number, field: 'VmRSS' | 'VmHWM'): number => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) * 1024;

/** A `turnstile worker` process (the CLI, as operators run it), ready when it says so. */
async function startWorker(extraEnv: Record<string, string> = {}): Promise<{ child: ChildProcess; out: () => string }> {
  // With the malloc tunables workers are deployed with (they keep freed memory, which counts in RSS).
  const env = withWorkerMalloc({ ...process.env, TEMPORAL_ADDRESS: h.address, TURNSTILE_DATA: h.dataRoot, TURNSTILE_TASK_QUEUE: h.taskQueue, TURNSTILE_WORKER_MEMORY: '1GiB', ...extraEnv });
  const child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'scripts', 'turnstile.mjs'), 'worker'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  workers.push(child);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  await eventually(async () => out.includes('worker on'), 'a worker up', 60_000, 100);
  return { child, out: () => out };
}

/**
 * Samples each worker's RSS every 250 ms with what its registry record (rewritten every
 * 2 s) says it holds: when a peak is over the bound, the assertion names what ran then.
 */
function sampleRss(pids: number[]): { stop: () => Promise<Map<number, string>> } {
  const highest = new Map<number, { rss: number; at: number; held: string }>();
  const t0 = Date.now();
  let running = true;
  const loop = (async () => {
    while (running) {
      const records = await liveRecords(h.dataRoot).catch(() => []);
      let alive = 0;
      for (const pid of pids) {
        const rss = (() => {
          try {
            return vm(pid, 'VmRSS');
          } catch {
            return NaN; // exited
          }
        })();
        if (Number.isNaN(rss)) continue;
        alive++;
        if (rss <= (highest.get(pid)?.rss ?? 0)) continue;
        const rec = records.find((r) => r.pid === pid);
        const units = (rec?.running ?? []).filter((x) => x.activity !== 'poll').map((x) => `${x.activity} ${x.unit ?? x.id} ${(x.bytes / 2 ** 20).toFixed(0)} MiB`);
        highest.set(pid, { rss, at: (Date.now() - t0) / 1000, held: rec ? `reserved ${(rec.reservedBytes / 2 ** 20).toFixed(0)} MiB: ${units.join(', ') || 'no unit'}` : 'no record' });
      }
      // Once every worker is gone (a failed test's afterAll kills them) the loop ends by itself.
      if (alive === 0) break;
      await sleep(250);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return new Map([...highest].map(([pid, x]) => [pid, `highest sampled RSS ${(x.rss / 2 ** 20).toFixed(0)} MiB at +${x.at.toFixed(1)} s, ${x.held}`]));
    },
  };
}

/** Seals `gens` generations into each of `count` new one-shard tables and starts their workflows. */
async function sealedTables(prefix: string, count: number, gens: number, policy: object): Promise<{ names: string[]; sealed: Map<string, number> }> {
  const names = Array.from({ length: count }, (_, t) => uniqueName(`${prefix}${t}`));
  const sealed = new Map<string, number>();
  const metas = [];
  for (const [t, name] of names.entries()) {
    metas.push(await createTableMeta(h.dataRoot, { name, key: 'id', shards: shardNames(1), indices: [] }));
    for (let g = 0; g < gens; g++) sealed.set(name, (await sealGeneration(h.dataRoot, name, shardNames(1)[0]!, rowsOf(t, g))).seq);
  }
  for (const meta of metas) await h.tables.start({ ...workflowArgsFor(meta), policy });
  return { names, sealed };
}

/** Rows of generation g of a table: overlapping key windows, values naming (table, g). */
function rowsOf(t: number, g: number): Record<string, unknown>[] {
  const start = g * (ROWS / 2);
  return Array.from({ length: ROWS }, (_, i) => ({ id: start + i, value: `${t}-${g}-${start + i}-${PAD}`, n: g * 1e6 + i }));
}

/**
 * Waits until the worker `victim` holds a unit's reservation. If it never does, the
 * error says what each worker held, how far the tables got and what the worker printed
 * (in the error itself: CI shows the end of the output, where the failures are).
 */
async function secondWorkerRunsAUnit(victim: number, names: string[], out: () => string): Promise<void> {
  await eventually(async () => (await liveRecords(h.dataRoot)).find((r) => r.pid === victim)?.running.some((x) => x.activity !== 'poll'), 'the second worker running a unit', 120_000, 50).catch(async (e: unknown) => {
    const records = JSON.stringify(await liveRecords(h.dataRoot));
    const turns = JSON.stringify(await Promise.all(names.map(async (n) => (await h.tables.status(n)).counters.turns.merge)));
    throw new Error(`${e instanceof Error ? e.message : String(e)}; live records ${records}; merge turns per table ${turns}; its output ${out().slice(-1500)}`);
  });
}

test('two 1 GiB workers merge 20 tables of ~400 MiB units within their budgets; a SIGKILLed one loses nothing', async () => {
  const t0 = Date.now();
  const phase = (what: string) => console.log(`fleet-memory: ${what} at +${((Date.now() - t0) / 1000).toFixed(1)} s`);
  const a = await startWorker();
  const b = await startWorker();
  expect(a.out()).toContain(`memory budget 1024 MiB (${BUDGET} bytes, worker.memoryBudgetBytes)`);
  // The idle baseline: the workers are up and polling, no table exists yet.
  await sleep(1500);
  const baseline = new Map(workers.map((w) => [w.pid!, vm(w.pid!, 'VmRSS')]));
  const sampler = sampleRss(workers.map((w) => w.pid!));

  const names = Array.from({ length: TABLES }, (_, t) => uniqueName(`fleet${t}`));
  const shard = shardNames(1)[0]!;
  const policy = { periodSecs: { optimize: 0, index: 0, gc: 0 }, stallSecs: { read: 5, encode: 5, commit: 10 } };
  const sealed = new Map<string, number>();
  let generationBytes = 0;
  // All generations are sealed before any workflow starts (their first snapshot finds
  // them), so the 20 backlogs are there at once and both workers are busy for a while.
  const metas = [];
  for (const [t, name] of names.entries()) {
    const meta = await createTableMeta(h.dataRoot, { name, key: 'id', shards: shardNames(1), indices: [] });
    metas.push(meta);
    for (let g = 0; g < GENS; g++) {
      const r = await sealGeneration(h.dataRoot, name, shard, rowsOf(t, g));
      sealed.set(name, r.seq);
      generationBytes = Math.max(generationBytes, r.bytes);
    }
  }
  phase('20 tables sealed');
  for (const meta of metas) await h.tables.start({ ...workflowArgsFor(meta), policy });
  phase('20 workflows started');
  // The premise: two generations fit a batch, three do not, and a batch's commit needs about 400 MiB.
  expect(2 * generationBytes).toBeLessThanOrEqual(maxBatchBytes(BUDGET));
  expect(3 * generationBytes).toBeGreaterThan(maxBatchBytes(BUDGET));

  // Both workers are listed by `turnstile workers --json` with their budgets.
  const listed = spawnSync(process.execPath, [path.join(PROJECT_ROOT, 'scripts', 'turnstile.mjs'), 'workers', '--json'], { env: { ...process.env, TURNSTILE_DATA: h.dataRoot }, encoding: 'utf8' });
  const rows = (JSON.parse(listed.stdout) as { workers: { pid: number; budgetBytes: number }[] }).workers;
  expect(rows.map((r) => r.pid).sort()).toEqual(workers.map((w) => w.pid).sort());
  expect(rows.every((r) => r.budgetBytes === BUDGET)).toBe(true);

  // Kill B with kill -9 while it holds a unit's reservation, once some table is done.
  const waiter = new MergeWaiter(h.client);
  // Whichever table is merged first (under load the first-named one can be among the
  // last, and then no work is left for the second worker to be caught running).
  await Promise.any(names.map((n) => waiter.wait(n, shard, sealed.get(n)!)));
  phase('first table merged');
  const victim = b.child.pid!;
  await secondWorkerRunsAUnit(victim, names, b.out);
  const peakOfVictim = vm(victim, 'VmHWM');
  const survivorBefore = (await liveRecords(h.dataRoot)).find((r) => r.pid === a.child.pid)!;
  phase('second worker killed');
  b.child.kill('SIGKILL');
  await new Promise((r) => b.child.once('exit', r));
  // Its reservations died with it: it is no longer listed, and the survivor's budget and claim size did not move.
  const after = await liveRecords(h.dataRoot);
  expect(after.map((r) => r.pid)).toEqual([a.child.pid]);
  expect(after[0]!.budgetBytes).toBe(survivorBefore.budgetBytes);
  expect(after[0]!.claimBytes).toBe(survivorBefore.claimBytes);

  // Everything merges, exactly, on the survivor.
  for (const name of names) await waiter.wait(name, shard, sealed.get(name)!);
  phase('all merged');
  const peakOfSurvivor = vm(a.child.pid!, 'VmHWM');
  const atPeak = await sampler.stop();
  const merges: number[] = [];
  let headroomWaits = 0;
  for (const [t, name] of names.entries()) {
    await expectRowsExactly(h.dataRoot, name, newestPerKey(Array.from({ length: GENS }, (_, g) => ({ seq: g + 1, rows: rowsOf(t, g) }))));
    const counters = (await h.tables.operatorState(name)).counters;
    merges.push(counters.merges);
    headroomWaits += counters.headroomWaits ?? 0;
  }
  // Split: no table's three generations went in one batch.
  expect(Math.min(...merges)).toBeGreaterThanOrEqual(2);
  // Once idle, the survivor holds no unit's reservation (poll claims only).
  await eventually(async () => (await liveRecords(h.dataRoot))[0]?.running.every((x) => x.activity === 'poll'), 'the survivor idle', 30_000);
  // Every unit found the claim its task came through marked used by the SDK (none went on without it).
  expect((await liveRecords(h.dataRoot))[0]?.unmarkedTakes).toBe(0);

  const report = [
    { worker: 'A (survived)', pid: a.child.pid!, peak: peakOfSurvivor },
    { worker: 'B (SIGKILLed)', pid: victim, peak: peakOfVictim },
  ].map((w) => ({ ...w, baseline: baseline.get(w.pid)! }));
  console.log(
    `fleet-memory: generation ${(generationBytes / 2 ** 20).toFixed(1)} MiB; ` +
      report.map((w) => `${w.worker}: peak RSS ${(w.peak / 2 ** 20).toFixed(0)} MiB = ${((w.peak / BUDGET) * 100).toFixed(0)}% of the 1024 MiB budget (idle baseline ${(w.baseline / 2 ** 20).toFixed(0)} MiB)`).join('; ') +
      `; merges per table ${Math.min(...merges)}..${Math.max(...merges)}; commits that gave the turn back for want of headroom: ${headroomWaits}; ` +
      report.map((w) => `${w.worker}: ${atPeak.get(w.pid)}`).join('; '),
  );
  for (const w of report) expect(w.peak, `${w.worker} peak RSS (${atPeak.get(w.pid)})`).toBeLessThanOrEqual(BUDGET + w.baseline + KEPT_BYTES_MAX);
}, 600_000);

test('SIGTERM drains a worker within worker.shutdownGraceSecs; its units hand over to the other worker and every table ends exact', async () => {
  const graceSecs = 3;
  const config = path.join(path.dirname(h.dataRoot), `sigterm-${process.pid}.json`);
  fs.writeFileSync(config, JSON.stringify({ worker: { shutdownGraceSecs: graceSecs } }));
  const a = await startWorker({ TURNSTILE_CONFIG: config });
  const b = await startWorker({ TURNSTILE_CONFIG: config });
  const policy = { periodSecs: { optimize: 0, index: 0, gc: 0 }, stallSecs: { read: 5, encode: 5, commit: 10 } };
  const { names, sealed } = await sealedTables('drain', 6, 2, policy);
  const shard = shardNames(1)[0]!;

  // SIGTERM while B runs a unit: it stops polling at once, lets the unit run for the
  // grace at most, removes its registry record and exits.
  const victim = b.child.pid!;
  await secondWorkerRunsAUnit(victim, names, b.out);
  const unitsAtStop = (await liveRecords(h.dataRoot)).find((r) => r.pid === victim)!.running.filter((x) => x.activity !== 'poll').map((x) => x.unit);
  const stoppedAt = Date.now();
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => b.child.once('exit', (code, signal) => r({ code, signal })));
  b.child.kill('SIGTERM');
  // Grace, then the SDK cancels what still runs; 30 s more for the process to wind down on a loaded machine.
  const exit = await Promise.race([exited, new Promise<null>((r) => setTimeout(() => r(null), (graceSecs + 30) * 1000))]);
  expect(exit, 'the worker exited after SIGTERM').toEqual({ code: 0, signal: null });
  const drainSecs = (Date.now() - stoppedAt) / 1000;
  // It removed its own record (not only dropped out because its pid died).
  const recordFiles = fs.readdirSync(path.join(h.dataRoot, '_workers'));
  expect(recordFiles.filter((f) => f.startsWith(`${victim}@`))).toEqual([]);

  // Its units hand over: the survivor merges every table, exactly.
  const waiter = new MergeWaiter(h.client);
  for (const name of names) await waiter.wait(name, shard, sealed.get(name)!);
  for (const [t, name] of names.entries()) {
    await expectRowsExactly(h.dataRoot, name, newestPerKey(Array.from({ length: 2 }, (_, g) => ({ seq: g + 1, rows: rowsOf(t, g) }))));
  }
  console.log(`sigterm: worker ${victim} exited ${drainSecs.toFixed(1)} s after SIGTERM (shutdownGraceSecs ${graceSecs}) while running ${unitsAtStop.join(', ')}; all ${names.length} tables exact on the survivor`);
  a.child.kill('SIGTERM');
  await new Promise((r) => a.child.once('exit', r));
}, 600_000);
