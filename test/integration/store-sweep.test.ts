import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { MergeWaiter } from '../../src/client/merge-waiter';
import { TableWriter, workflowArgsFor } from '../../src/client/table-writer';
import { shardNames } from '../../src/messages/names';
import { createTableMeta, sealGeneration } from '../../src/storage/generation-store';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import { sleep } from '../../src/util/sleep';
import { METRICS } from '../../src/worker/metric-names';
import { generateRows } from '../../src/writer';
import { eventually, startHarness, uniqueName, type Harness } from '../support/harness';
import { historyEvents } from '../support/history';

// The fleet's store sweep with real `turnstile worker` processes: tables whose own scans
// are an hour apart, a seal whose demand signal never came (a writer that died between
// seal and signal) is told to its table by the sweep within two sweep periods; an idle
// table gets nothing from it, and of two workers only one sweeps.

const SWEEP_SECS = 2;
const POLICY = { snapshotIntervalSecs: 3600, snapshotMaxIntervalSecs: 3600, periodSecs: { optimize: 0, index: 0, gc: 0 } };

let h: Harness;
const workers: { child: ChildProcess; out: () => string }[] = [];
beforeAll(async () => {
  h = await startHarness({ name: 'sweep', workers: 0 });
  for (let i = 0; i < 2; i++) workers.push(await startWorker());
});
afterAll(async () => {
  await Promise.all(
    workers.map(async ({ child }) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }),
  );
  await h?.close();
});

async function startWorker(): Promise<{ child: ChildProcess; out: () => string }> {
  const env = { ...process.env, TEMPORAL_ADDRESS: h.address, TURNSTILE_DATA: h.dataRoot, TURNSTILE_TASK_QUEUE: h.taskQueue, TURNSTILE_WORKER_MEMORY: '1GiB', TURNSTILE_SWEEP_SECS: String(SWEEP_SECS) };
  const child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'scripts', 'turnstile.mjs'), 'worker'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  await eventually(async () => out.includes('worker on'), 'a worker up', 60_000, 100);
  return { child, out: () => out };
}

async function newTable(prefix: string) {
  const meta = await createTableMeta(h.dataRoot, { name: uniqueName(prefix), key: 'id', shards: shardNames(2), indices: [] });
  await h.tables.start({ ...workflowArgsFor(meta), policy: POLICY });
  return meta.name;
}

test('a seal nobody signalled is told to its quiet table within two sweeps; idle tables get nothing; one worker sweeps', async () => {
  const lost = await newTable('lost');
  const idle = await newTable('idle');
  const waiter = new MergeWaiter(h.client);
  // A writer writes once and is merged, so the table has been active and is quiet now.
  const writer = await TableWriter.open(h.tables, h.dataRoot, lost);
  const first = await writer.write('s0', generateRows({ keys: [0, 999], count: 100, shard: 's0', shards: ['s0', 's1'], seed: 1 }));
  await writer.close();
  await waiter.wait(lost, 's0', first.seq);
  // The sweeps see that seal quiet and tell the table once (a no-op for it: it knew).
  await sleep(3 * SWEEP_SECS * 1000);
  const idleEventsBefore = (await h.tables.handle(idle).fetchHistory()).events!.length;

  // A writer that dies between seal and signal: the seal alone.
  const sealedAt = Date.now();
  const sealed = await sealGeneration(h.dataRoot, lost, 's1', generateRows({ keys: [0, 999], count: 100, shard: 's1', shards: ['s0', 's1'], seed: 2 }));
  const r = await waiter.wait(lost, 's1', sealed.seq);
  const mergedAt = Date.now();
  expect(r.mergedThroughSeq).toBe(sealed.seq);

  // The table learned it from a demand signal (its own scans are an hour apart), sent by
  // a worker process's client: the sweep.
  const signals = (await historyEvents(h.tables.handle(lost), 'WORKFLOW_EXECUTION_SIGNALED')).map((e) => e.workflowExecutionSignaledEventAttributes!);
  const telling = signals.filter((s) => s.signalName === 'demands' && JSON.stringify(s.input).length > 0);
  const pids = workers.map((w) => String(w.child.pid));
  const fromWorkers = telling.filter((s) => pids.some((p) => s.identity?.startsWith(`${p}@`)));
  expect(fromWorkers.length).toBeGreaterThanOrEqual(1);
  const snapshots = (await historyEvents(h.tables.handle(lost), 'ACTIVITY_TASK_SCHEDULED')).filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'snapshot');
  // Only the start-up scan: nothing of the table's own found the seal.
  expect(snapshots.length).toBeLessThanOrEqual(1);
  console.log(`lost signal: merged ${((mergedAt - sealedAt) / 1000).toFixed(1)} s after the seal (sweep every ${SWEEP_SECS} s, bound two sweeps plus one sweep's duration)`);
  // Two sweep periods plus a sweep and a merge; generous for a loaded machine, far below the tables' own hour.
  expect(mergedAt - sealedAt).toBeLessThan(60_000);

  // Quiet again: several sweeps later, neither table got anything more.
  const lostEvents = (await h.tables.handle(lost).fetchHistory()).events!.length;
  await sleep(4 * SWEEP_SECS * 1000);
  const after = async (t: string) => (await h.tables.handle(t).fetchHistory()).events!.length;
  // The merge's own tail (its commit's last events) may land after the wait returned.
  expect(await after(lost)).toBeLessThanOrEqual(lostEvents + 3);
  expect(await after(idle)).toBe(idleEventsBefore);

  // One worker swept: the other printed no sweep line. Its metrics endpoint counts what it told.
  const sweeping = workers.filter((w) => w.out().includes('store sweep:'));
  expect(sweeping).toHaveLength(1);
  const url = /Metrics: (http:\/\/\S+)/.exec(sweeping[0]!.out())?.[1];
  expect(url).toBeDefined();
  const scraped = await (await fetch(url!)).text();
  const told = new RegExp(`^${METRICS.sweepTold}\\{[^}]*table="${lost}"[^}]*\\} (\\d+)`, 'm').exec(scraped);
  expect(Number(told?.[1])).toBeGreaterThanOrEqual(1);
  expect(scraped).not.toMatch(new RegExp(`${METRICS.sweepTold}\\{[^}]*table="${idle}"`));
});
