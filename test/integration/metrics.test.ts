import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import { METRICS } from '../../src/worker/metric-names';
import { freePort } from '../../src/server/ports';
import { createTableMeta } from '../../src/storage/generation-store';
import { TableWriter } from '../../src/client/table-writer';
import { generateRows } from '../../src/writer';
import { workflowIdForTable } from '../../src/messages/names';
import * as msg from '../../workflows/messages';
import { eventually, startHarness, uniqueName, type Harness } from '../support/harness';
import { startPrometheus, type PromServer } from '../support/prometheus';
import { findTool, PROMETHEUS } from '../support/tools';

// A real Prometheus server scrapes a real `turnstile worker` (the CLI, metrics on
// worker.metricsAddress) while a writer seals generations: its HTTP API returns the
// table's backlog, then the turns, turn waits, rows merged and phase durations once
// merging resumes. The Grafana dashboard in the repo queries only names it scraped.

const tool = findTool(PROMETHEUS);
let h: Harness;
let prom: PromServer | undefined;
let stopWorker: (() => Promise<number | null>) | undefined;
beforeAll(async () => {
  h = await startHarness({ name: 'metrics', workers: 0 });
});
afterAll(async () => {
  await prom?.stop();
  await stopWorker?.();
  await h?.close();
});

test('prometheus scrapes a worker under load: turnstile_backlog for the table, then turns, waits, rows, phases; the dashboard uses only scraped names', async (ctx) => {
  if ('skip' in tool) return ctx.skip(tool.skip);
  const metricsAddress = `127.0.0.1:${await freePort()}`;
  const env = { ...process.env, TEMPORAL_ADDRESS: h.address, TURNSTILE_DATA: h.dataRoot, TURNSTILE_TASK_QUEUE: h.taskQueue, TURNSTILE_METRICS_ADDRESS: metricsAddress };
  const child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'scripts', 'turnstile.mjs'), 'worker'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  stopWorker = async () => {
    if (child.exitCode === null) child.kill('SIGINT');
    return exited;
  };
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  await eventually(async () => out.includes('worker on '), 'the worker to start', 90_000);
  expect(out).toContain(`Metrics: http://${metricsAddress}/metrics`);

  prom = await startPrometheus(tool.path, [metricsAddress]);
  const table = uniqueName('prom');
  await createTableMeta(h.dataRoot, { name: table, key: 'id', shards: ['s0', 's1'], indices: [] });
  const writer = await TableWriter.open(h.tables, h.dataRoot, table);
  const write = async (shard: string, g: number) => writer.write(shard, generateRows({ keys: [g * 50, g * 50 + 99], shard, shards: ['s0', 's1'], seed: g }));
  await write('s0', 0);
  await writer.flush();
  // Merges paused: the backlog stays up long enough to be scraped.
  await h.tables.pause(table, { kind: 'merge' });
  for (let g = 1; g <= 6; g++) await write(g % 2 ? 's1' : 's0', g);
  await writer.flush();

  const backlog = await eventually(async () => {
    const r = await prom!.query(`${METRICS.backlog}{table="${table}"} > 0`);
    return r.length === 1 ? Number(r[0]!.value[1]) : null;
  }, 'prometheus to return turnstile_backlog > 0 for the table', 30_000, 500);
  expect(backlog).toBeGreaterThanOrEqual(6);
  expect(backlog).toBeLessThanOrEqual(7);
  expect((await prom.query(`${METRICS.writePressure}{table="${table}"}`)).length).toBe(1);

  await h.tables.resume(table, { kind: 'merge' });
  await eventually(async () => (await prom!.query(`${METRICS.backlog}{table="${table}"} == 0`)).length === 1, 'the backlog scraped back at 0', 60_000, 500).catch(async (e: Error) => {
    const s = await h.tables.status(table);
    const m = await (await fetch(`http://${metricsAddress}/metrics`)).text();
    throw new Error(`${e.message}; status backlog ${s.backlog} turns ${JSON.stringify(s.counters.turns)}; worker says ${m.split('\n').filter((l) => l.startsWith('turnstile_backlog')).join(' | ')}; out ${out}`);
  });
  const merged = await eventually(async () => {
    const r = await prom!.query(`${METRICS.rowsMerged}{table="${table}"}`);
    return r.length === 1 && Number(r[0]!.value[1]) > 0 ? Number(r[0]!.value[1]) : null;
  }, 'rows merged scraped', 30_000, 500);
  const status = await h.tables.status(table);
  expect(merged).toBe(status.counters.rowsMerged);
  const turns = await prom.query(`sum(${METRICS.turns}{table="${table}", kind="merge"})`);
  expect(Number(turns[0]?.value[1])).toBe(status.counters.turns.merge);
  // Every granted merge turn was observed in the wait histogram.
  const waits = await prom.query(`sum(${METRICS.turnWaitSeconds}_count{table="${table}", kind="merge"})`);
  expect(Number(waits[0]?.value[1])).toBeGreaterThanOrEqual(status.counters.turns.merge);
  await eventually(async () => (await prom!.query(`${METRICS.phaseSeconds}_count{phase="read"}`)).length > 0, 'phase durations scraped', 30_000, 500);

  // A signal a buggy client sends for a shard the table does not have is dropped and
  // counted: the same count in status and in Prometheus.
  await h.client.workflow.getHandle(workflowIdForTable(table)).signal(msg.demand, { shard: 's9', sealedThroughSeq: 1, revision: 1 });
  const rejected = await eventually(async () => {
    const r = await prom!.query(`${METRICS.rejectedSignals}{table="${table}"} > 0`);
    return r.length === 1 ? Number(r[0]!.value[1]) : null;
  }, 'rejected signals scraped', 30_000, 500);
  expect(rejected).toBe(1);
  expect((await h.tables.status(table)).counters.rejectedSignals).toBe(1);

  // The SDK's own runtime metrics come through the same exporter.
  const names = await prom.names();
  expect(names).toContain('temporal_workflow_task_execution_latency_bucket');
  for (const n of [METRICS.backlog, METRICS.writePressure, METRICS.queueLength, METRICS.reservedBytes, METRICS.drainEtaSeconds, METRICS.turns, METRICS.stalls, METRICS.retries, METRICS.rowsMerged, METRICS.rejectedSignals]) expect(names).toContain(n);

  // The Grafana dashboard: every metric its queries name was scraped here.
  const dashboard = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'docs', 'grafana-dashboard.json'), 'utf8')) as { panels: { title: string; targets: { expr: string }[] }[] };
  const used = new Set(dashboard.panels.flatMap((p) => p.targets.flatMap((t) => t.expr.match(/\b(?:turnstile|temporal)_[a-z0-9_]+/g) ?? [])));
  expect(used.size).toBeGreaterThanOrEqual(10);
  expect([...used].filter((n) => !names.includes(n))).toEqual([]);
  for (const panel of ['Backlog', 'Write pressure', 'Turn wait', 'Stalls']) expect(dashboard.panels.some((p) => p.title.startsWith(panel))).toBe(true);

  expect(await stopWorker()).toBe(0);
}, 150_000);
