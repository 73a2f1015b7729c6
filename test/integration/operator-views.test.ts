import { execFile } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import { createTableMeta } from '../../src/storage/generation-store';
import { TableWriter } from '../../src/client/table-writer';
import { MergeWaiter } from '../../src/client/merge-waiter';
import { generateRows } from '../../src/writer';
import type { TopRow } from '../../src/cli/top-rows';
import type { Grant } from '../../src/policy';
import { eventually, startHarness, uniqueName, type Harness } from '../support/harness';

// `turnstile top --once --json` and `turnstile why NAME` as operators run them, against
// two real tables: `hot` with merges paused and generations waiting, `cold` merged.

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ name: 'views' });
});
afterAll(async () => h?.close());

const turnstile = (...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
  new Promise((resolve) =>
    execFile(process.execPath, [path.join(PROJECT_ROOT, 'scripts', 'turnstile.mjs'), ...args], { env: { ...process.env, TEMPORAL_ADDRESS: h.address, TURNSTILE_DATA: h.dataRoot, TURNSTILE_TASK_QUEUE: h.taskQueue }, timeout: 90_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );

test('top --once --json lists tables most backed-up first with turn, longest wait, drain ETA; why and status --json give the grants and why each won', async () => {
  const [hot, cold] = [uniqueName('hot'), uniqueName('cold')];
  const writers: Record<string, TableWriter> = {};
  for (const name of [hot, cold]) {
    await createTableMeta(h.dataRoot, { name, key: 'id', shards: ['s0', 's1'], indices: [] });
    writers[name] = await TableWriter.open(h.tables, h.dataRoot, name);
    for (const shard of ['s0', 's1']) await writers[name].write(shard, generateRows({ keys: [0, 99], shard, shards: ['s0', 's1'], seed: 1 }));
    await writers[name].flush();
  }
  const waiter = new MergeWaiter(h.client);
  for (const name of [hot, cold]) for (const shard of ['s0', 's1']) expect((await waiter.wait(name, shard, 1)).merged).toBe(true);
  await h.tables.pause(hot, { kind: 'merge' });
  for (let g = 2; g <= 4; g++) await writers[hot]!.write('s0', generateRows({ keys: [g * 10, g * 10 + 99], shard: 's0', shards: ['s0', 's1'], seed: g }));
  await writers[hot]!.flush();
  await eventually(async () => (await h.tables.state(hot)).backlog === 3, 'hot backed up by 3');

  const r = await turnstile('top', '--once', '--json');
  expect(r.code, r.stderr).toBe(0);
  const out = JSON.parse(r.stdout) as { tables: TopRow[]; unanswered: { table: string }[] };
  // Other test files' tables share the server: look at ours, in the order top gave them.
  const ours = out.tables.filter((row) => row.table === hot || row.table === cold);
  expect(ours.map((row) => row.table)).toEqual([hot, cold]);
  const backlogs = out.tables.map((row) => row.backlog);
  expect(backlogs).toEqual([...backlogs].sort((a, b) => b - a));
  expect(ours[0]).toMatchObject({ backlog: 3, turn: null, paused: true, stalled: [], etaSecs: null });
  expect(ours[0]!.drain).toMatch(/^(never at current rates|measuring)/);
  expect(ours[0]!.longestWait?.unitId).toBe('merge/s0');
  expect(ours[1]).toMatchObject({ backlog: 0, etaSecs: 0, drain: 'drained', paused: false });
  // Its merges wrote the sealed rows into the table: bytes written per byte sealed.
  expect(ours[1]!.writeAmplification).toBeGreaterThan(0);

  const human = await turnstile('top', '--once');
  expect(human.code, human.stderr).toBe(0);
  expect(human.stdout).toMatch(/^turnstile top {2}\d\d:\d\d:\d\d UTC/);
  const hotLine = human.stdout.split('\n').find((l) => l.startsWith(hot))!;
  expect(hotLine).toMatch(/\(paused\)\s+3\s+0\.\d\d\s+free\s+merge\/s0 \d+ s/);

  // why: the cold table's two merges (or one grouped), each with the reason it won.
  const why = await turnstile('why', cold, '--json');
  expect(why.code, why.stderr).toBe(0);
  const w = JSON.parse(why.stdout) as { table: string; grants: Grant[] };
  expect(w.table).toBe(cold);
  const merged = w.grants.filter((g) => g.kind === 'merge').flatMap((g) => [g.unitId, ...(g.riders ?? [])]);
  expect(merged.sort()).toEqual(['merge/s0', 'merge/s1']);
  for (const g of w.grants) expect(g.why).toMatch(/class \d/);
  const whyText = await turnstile('why', cold);
  expect(whyText.stdout).toMatch(/won: class \d/);
  // The same record in status --json, with the drain estimate.
  const st = JSON.parse((await turnstile('status', cold, '--json')).stdout) as { grants: Grant[]; drain: { state: string } };
  expect(st.grants).toEqual(w.grants);
  expect(st.drain.state).toBe('drained');
  // Bad input: one line, exit 2.
  const bad = await turnstile('why', 'no/such');
  expect(bad.code).toBe(2);
  expect(bad.stderr.trim().split('\n')).toHaveLength(1);
}, 150_000);

test('top without --once keeps refreshing until Ctrl-C (piped: one frame after another)', async () => {
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'scripts', 'turnstile.mjs'), 'top', '--every', '1'], {
    env: { ...process.env, TEMPORAL_ADDRESS: h.address, TURNSTILE_DATA: h.dataRoot, TURNSTILE_TASK_QUEUE: h.taskQueue },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  await eventually(async () => (out.match(/^turnstile top /gm) ?? []).length >= 3, 'three frames', 60_000, 200);
  child.kill('SIGINT');
  expect(await exited).toBe(0);
}, 90_000);
