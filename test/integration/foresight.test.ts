import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import { createTableMeta } from '../../src/storage/generation-store';
import { TableWriter, workflowArgsFor } from '../../src/client/table-writer';
import { shardNames } from '../../src/messages/names';
import { KINDS } from '../../src/policy/types';
import type { DemandRecord } from '../../src/policy/demand-record';
import type { UnitHistory } from '../../src/policy/unit-history';
import type { StatusView } from '../../workflows/messages';
import { eventually, startHarness, uniqueName, type Harness } from '../support/harness';
import { expectMergedExactly } from '../support/expect-exact';
import { Load } from '../support/load';
import { chainHistories } from '../support/history';
import { sleep } from '../../src/util/sleep';
import { policyDryRun, type DryRunReport } from '../../src/sim/dry-run';
import type { FreezePoint } from '../../activities/deps';

// A busy table on the real server (a hot merger on two shards, optimize and an index
// kept built): its unit history with costs as `turnstile history` prints it, and its
// demand record, which the policy dry run replays. `npm test` runs this file alone after
// the others (scripts/test-lanes.mjs RUN_ALONE): with another integration file on two
// cores, every turn's handoff stretches past what the simulator models.

let h: Harness;
let busy: { table: string; status: StatusView; history: UnitHistory; record: DemandRecord; loadMs: number };

const turnstile = (...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
  new Promise((resolve) =>
    execFile(process.execPath, [path.join(PROJECT_ROOT, 'scripts', 'turnstile.mjs'), ...args], { env: { ...process.env, TEMPORAL_ADDRESS: h.address, TURNSTILE_DATA: h.dataRoot, TURNSTILE_TASK_QUEUE: h.taskQueue }, timeout: 120_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );

/**
 * The policy the busy table runs: optimize and index due often, and merges may take every
 * turn in a row, so the other kinds get in by promotion after maxTurnWaitSecs: waits of
 * seconds, which the calibration must reproduce.
 */
const BUSY_POLICY = {
  periodSecs: { optimize: 5, index: 8, gc: 0 },
  maxConsecutiveTurns: { merge: 1000 },
  maxTurnWaitSecs: { merge: 10, optimize: 4, index: 4 },
  softBacklog: 100_000,
  hardBacklog: 200_000,
};
const LOAD_MS = 75_000;

beforeAll(async () => {
  // Merge commits take 500 ms longer (a larger table): turns are contended. Optimize's take
  // 1.1 s, its first run riding a merge too: one under a second would go on riding the
  // merges' turns (src/policy/rides.ts) instead of waiting for its own, and those waits
  // are what the calibration reproduces.
  const slowMs = (p: FreezePoint): number => (p.phase !== 'commit' ? 0 : p.work === 'optimize' || p.activity === 'commitOptimize' ? 1100 : p.activity === 'commitMerge' && p.work === undefined ? 500 : 0);
  h = await startHarness({ name: 'foresight', deps: { faults: { freezeProgress: (p) => (slowMs(p) > 0 ? sleep(slowMs(p)) : undefined) } } });
  const table = uniqueName('busy');
  const meta = await createTableMeta(h.dataRoot, { name: table, key: 'id', shards: shardNames(2), indices: [{ column: 'id', type: 'btree' }] });
  await h.tables.start({ ...workflowArgsFor(meta), policy: BUSY_POLICY });
  const writer = await TableWriter.open(h.tables, h.dataRoot, table);
  const load = new Load(writer, { rowsPerGeneration: 500, keySpan: 20_000, pauseMs: 100 });
  const t0 = Date.now();
  load.start();
  await sleep(LOAD_MS);
  await load.stop();
  const loadMs = Date.now() - t0;
  await eventually(async () => (await h.tables.state(table)).backlog === 0, 'the backlog drained', 120_000, 500);
  await expectMergedExactly(h, table, load, ['s0', 's1']);
  // Turns still in flight end (optimize and index may be due once more).
  await eventually(async () => (await h.tables.state(table)).turn === null, 'the turn free', 60_000, 250);
  // The records are carried across continue-as-new: the busy minute spans several runs.
  const runs = (await chainHistories(h.client, h.tables.handle(table).workflowId)).length;
  expect(runs).toBeGreaterThan(1);
  busy = { table, status: await h.tables.status(table), history: await h.tables.history(table), record: await h.tables.demandRecord(table), loadMs };
}, 400_000);
afterAll(async () => h?.close());

test('the unit history lists every kind that ran, with outcome, why, rows, cost and reserved bytes, and exact totals', async () => {
  const { table, status, history } = busy;
  const c = status.counters;
  console.log(`busy table: turns ${JSON.stringify(c.turns)}, max waits ${JSON.stringify(c.maxTurnWaitSecs)}, history totals ${JSON.stringify(history.totals)}, sealed ${history.sealedBytes}`);
  expect(c.turns.merge).toBeGreaterThan(20);
  expect(c.turns.optimize).toBeGreaterThan(2);
  expect(c.turns.index).toBeGreaterThanOrEqual(1);
  // Every committed turn is an entry (grouped merges: one entry for the group); so is
  // every ride of a merge's turn (optimize's first run, rides.ts), which is not a turn.
  const committed = (k: (typeof KINDS)[number]) => history.entries.filter((e) => e.kind === k && e.outcome === 'committed');
  const rode = committed('optimize').filter((e) => e.why.startsWith('rode '));
  expect(committed('optimize').length - rode.length).toBe(c.turns.optimize);
  expect(committed('index').length).toBe(c.turns.index);
  for (const e of committed('merge')) {
    expect(e.why).not.toBe('');
    expect(e.grantedAtMs!).toBeGreaterThanOrEqual(e.readyAtMs!);
    expect(e.endedAtMs).toBeGreaterThan(e.grantedAtMs!);
    expect(e.rows).toBeGreaterThan(0);
    expect(e.reservedBytes).toBeGreaterThan(0);
    expect(e.bytesWritten).toBeGreaterThan(0);
    expect(e.cpuMs).toBeGreaterThan(0);
  }
  expect(history.totals.merge.units).toBeGreaterThanOrEqual(committed('merge').length);
  expect(history.sealedBytes).toBeGreaterThan(0);
  // status shows what the history counts.
  expect(status.cost?.sealedBytes).toBe(history.sealedBytes);
  expect(status.cost?.writeAmplification).toBeGreaterThan(0.5);

  const st = await turnstile('status', table);
  expect(st.code, st.stderr).toBe(0);
  expect(st.stdout).toMatch(/write amplification: \d+\.\d\d \(written by units merge \d+ MiB/);
  const top = await turnstile('top', '--once', '--json');
  const row = (JSON.parse(top.stdout) as { tables: { table: string; writeAmplification: number | null }[] }).tables.find((r) => r.table === table);
  expect(row?.writeAmplification).toBeGreaterThan(0.5);

  const out = await turnstile('history', table, '--since', '30m');
  expect(out.code, out.stderr).toBe(0);
  console.log(out.stdout.split('\n').slice(0, 12).join('\n'));
  expect(out.stdout).toMatch(/merge\/s[01](@\d+)? \d+-\d+/);
  expect(out.stdout).toMatch(/optimize +committed/);
  expect(out.stdout).toMatch(/write amplification \d+\.\d\d/);
  const json = await turnstile('history', table, '--json');
  expect(json.code, json.stderr).toBe(0);
  // Periodic preparations that find nothing may have ended since the history was read.
  expect((JSON.parse(json.stdout) as { units: unknown[] }).units.length).toBeGreaterThanOrEqual(history.entries.length);
  const bad = await turnstile('history', table, '--since', '3x');
  expect(bad.code).toBe(2);
  expect(bad.stderr.trim().split('\n')).toHaveLength(1);
  expect(bad.stderr).toContain('--since');
});

test('the demand record holds every seal and turn of the busy minute in 10 s buckets', () => {
  const { record, status, history } = busy;
  const sum = (f: (b: DemandRecord['buckets'][number]) => number) => record.buckets.reduce((s, b) => s + f(b), 0);
  expect(sum((b) => b.seals)).toBe(status.shards.reduce((s, x) => s + x.sealedThroughSeq, 0));
  expect(sum((b) => b.sealedBytes)).toBe(history.sealedBytes);
  for (const k of KINDS) expect(sum((b) => b.wait[k]?.n ?? 0), k).toBeGreaterThanOrEqual(status.counters.turns[k]);
  const maxWaitMs = Math.max(...record.buckets.map((b) => b.wait.optimize?.maxMs ?? 0));
  expect(maxWaitMs / 1000).toBeCloseTo(status.counters.maxTurnWaitSecs.optimize, 1);
  expect(record.buckets.length).toBeGreaterThanOrEqual(Math.floor(busy.loadMs / 10_000));
});

test('calibration: the simulator replaying the record under the policy that ran reproduces its turns, mean and max waits', () => {
  const { table, status, record } = busy;
  const report = policyDryRun({ table, shards: status.shards.map((s) => s.shard), current: status.policy, proposed: status.policy, record, nowMs: Date.now(), hours: 1 });
  expect(report).not.toBeNull();
  const { observed, current } = report!;
  const lines: string[] = [];
  // A waiter past its bound still waits for the holder's commit, and for one other unit
  // past its bound granted first (optimize and index share a bound here): two longest
  // recorded commits are how far unlucky draws can move a max wait on a loaded machine.
  const longestCommitSecs = Math.max(0, ...record.buckets.flatMap((b) => Object.values(b.commit).map((d) => d.maxMs))) / 1000;
  for (const k of ['merge', 'optimize', 'index'] as const) {
    const simTurns = current.median.turns[k];
    const simWait = current.median.maxWaitSecs[k] ?? 0;
    const obsWait = observed.maxWaitSecs[k] ?? 0;
    const simMean = current.median.meanWaitSecs[k] ?? 0;
    const obsMean = observed.meanWaitSecs[k] ?? 0;
    lines.push(`${k}: turns observed ${observed.turns[k]} simulated ${simTurns} (${current.runs.map((r) => r.turns[k]).join('/')}); mean wait observed ${obsMean.toFixed(2)} s simulated ${simMean.toFixed(2)} s; max wait observed ${obsWait.toFixed(2)} s simulated ${simWait.toFixed(2)} s; longest commit ${longestCommitSecs.toFixed(2)} s`);
    // Turns: within 40% or 3 turns. The replay spreads each 10 s bucket's seals evenly,
    // while the writer sealed them in a burst per shard pair: grouping of merges into one
    // turn differs by a few; optimize and index turns follow periodSecs and the recorded
    // share of preparations that found work, drawn per run. The handoff between one
    // commit's end and the next grant (a workflow task) is not modelled: alone it is a few
    // percent of a turn; next to another integration file it made every turn cycle up
    // to 30% longer.
    expect(Math.abs(simTurns - observed.turns[k]), lines.at(-1)).toBeLessThanOrEqual(Math.max(3, 0.4 * observed.turns[k]));
    // Mean waits: within 0.5 s, a quarter, or the max's allowance for one draw (below)
    // shared by the observed turns: a kind that ran once or twice (index here) has a
    // mean that is one or two such draws. The record keeps seals per 10 s bucket and the
    // replay spreads them evenly, so gaps between one writer's seals (a loaded machine
    // slows it) are filled in the replay: a waiting kind that the gaps let in early waits
    // less than the replay says, never more (CI: optimize 3.09 s observed over 8 turns,
    // 4.25 s simulated). Above the observed the simulator gets two fifths of its own
    // mean. A simulator that let merges overtake a kind past its bound misses by the bound
    // (4 s here) on every turn, and one that granted two turns at once errs low, so
    // either still fails.
    const drawSecs = 2 * longestCommitSecs + 1;
    const meanSlack = Math.max(0.5, 0.25 * obsMean, drawSecs / Math.max(1, observed.turns[k]), simMean > obsMean ? 0.4 * simMean : 0);
    expect(Math.abs(simMean - obsMean), lines.at(-1)).toBeLessThanOrEqual(meanSlack);
    // Max waits: within 2 s, half the observed, or two longest commits. A max is one
    // extreme draw of commit durations (recorded as count, sum, min and max per bucket),
    // and a busy worker's scheduling latency (workflow and activity tasks) is not modelled.
    expect(Math.abs(simWait - obsWait), lines.at(-1)).toBeLessThanOrEqual(Math.max(2, 0.5 * obsWait, drawSecs));
  }
  const obsBacklog = observed.backlogPeak ?? 0;
  lines.push(`backlog peak: observed ${obsBacklog} simulated ${current.median.backlogPeak} (${current.runs.map((r) => r.backlogPeak).join('/')})`);
  console.log(`calibration of ${table}:\n  ${lines.join('\n  ')}`);
  // The peak is one moment: within 10 generations, half of it (the replay's seals are
  // spread evenly within 10 s), or the spread of the simulated runs themselves (on a
  // loaded machine the recorded commit durations vary widely, and so do the seeds' peaks).
  const peaks = current.runs.map((r) => r.backlogPeak);
  expect(obsBacklog).toBeGreaterThan(0);
  expect(Math.abs(current.median.backlogPeak - obsBacklog), lines.at(-1)).toBeLessThanOrEqual(Math.max(10, 0.5 * obsBacklog, Math.max(...peaks) - Math.min(...peaks)));
});

test('policy --dry-run on the busy table: a shorter optimize bound shows shorter optimize waits, and nothing changes', async () => {
  const { table } = busy;
  const file = path.join(h.dataRoot, `${table}-proposed.json`);
  fs.writeFileSync(file, JSON.stringify({ maxTurnWaitSecs: { optimize: 1, index: 1 } }));
  const before = (await h.tables.state(table)).policy;
  const out = await turnstile('policy', table, '--set', file, '--dry-run', '--hours', '1');
  console.log(out.stdout);
  expect(out.code, out.stderr).toBe(0);
  expect(out.stdout).toContain('maxTurnWaitSecs.optimize 4 -> 1');
  const json = await turnstile('policy', table, '--set', file, '--dry-run', '--hours', '1', '--json');
  const report = JSON.parse(json.stdout) as DryRunReport;
  expect(report.proposed.median.maxWaitSecs.optimize!).toBeLessThan(report.current.median.maxWaitSecs.optimize! - 1.5);
  expect((await h.tables.state(table)).policy).toEqual(before);
});
