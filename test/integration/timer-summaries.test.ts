import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import { createTableMeta } from '../../src/storage/generation-store';
import { TableWriter } from '../../src/client/table-writer';
import { MergeWaiter } from '../../src/client/merge-waiter';
import { generateRows } from '../../src/writer';
import { ALARM_FALLBACK } from '../../workflows/timers';
import { timerSummaries } from '../support/history';
import { eventually, startHarness, uniqueName, type Harness } from '../support/harness';

// The Temporal UI shows a timer without a summary as "10 (1m)". Every timer of a table
// workflow says what it waits for: the alarm the core's earliest deadline (promotion,
// backoff, bump expiry, a due kind, snapshot), the bound of an awaitMerged update its end.

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ name: 'timers' });
});
afterAll(async () => h?.close());

// workflows/table.ts hands the alarm the core's reason and the awaitMerged bound its
// summary; until it does, the alarm's timers carry ALARM_FALLBACK and awaitMerged's none.
const tableShell = fs.readFileSync(path.join(PROJECT_ROOT, 'workflows', 'table.ts'), 'utf8');
const alarmGetsReason = /alarm\.set\(d\.atMs, d\.reason[,)]/.test(tableShell);
const awaitMergedGetsSummary = /awaitMergedTimer\(req\)/.test(tableShell);

/** The reasons src/policy/wake.ts gives. */
const WAKE_REASON = /^(promote \S+ to class 1 \(waited \d+ s\)|retry commit of \S+ \(attempt \d+\)|\S+ may take the turn again \(.*\)|bump of .* expires|(optimize|index|gc) due \(every \d+ s\)|snapshot of the generation store|look at the adopted table)$/;

async function tableWithWork(name: string): Promise<TableWriter> {
  const shards = ['s0', 's1'];
  await createTableMeta(h.dataRoot, { name, key: 'id', shards, indices: [], policy: { snapshotIntervalSecs: 1, maxTurnWaitSecs: { merge: 1 }, periodSecs: { optimize: 3, index: 0, gc: 0 }, periodicWhenIdle: true } });
  const writer = await TableWriter.open(h.tables, h.dataRoot, name);
  for (let g = 1; g <= 3; g++) for (const shard of shards) await writer.write(shard, generateRows({ keys: [g * 100, g * 100 + 99], shard, shards, seed: g }));
  await writer.flush();
  return writer;
}

test("every alarm timer of a table workflow carries a summary saying what it waits for", async () => {
  const name = uniqueName('alarm');
  await tableWithWork(name);
  const handle = h.tables.handle(name);
  // Merges, snapshots every second and an optimize every 3 s: several deadlines.
  await eventually(async () => (await h.tables.state(name)).shards.every((s) => s.mergedThroughSeq === 3), 'every generation merged');
  await h.tables.bump(name, { kind: 'gc', class: 2, reason: 'test', forSecs: 2 });
  const summaries = await eventually(async () => {
    const all = await timerSummaries(handle);
    return all.length >= 4 && all;
  }, 'four timers started');
  expect(summaries.filter((s) => s === ''), summaries.join(' | ')).toEqual([]);
  if (alarmGetsReason) for (const s of summaries) expect(s).toMatch(WAKE_REASON);
  else for (const s of summaries) expect(s).toBe(ALARM_FALLBACK);
});

test('the bound of an awaitMerged update says which wait it bounds', async (ctx) => {
  if (!awaitMergedGetsSummary) ctx.skip('workflows/table.ts does not yet pass awaitMergedTimer(req) to the bounded condition() of awaitMerged');
  const name = uniqueName('await');
  const writer = await tableWithWork(name);
  await eventually(async () => (await h.tables.state(name)).shards.every((s) => s.mergedThroughSeq === 3), 'every generation merged');
  await h.tables.pause(name);
  await writer.write('s0', generateRows({ keys: [900, 999], shard: 's0', shards: ['s0', 's1'], seed: 9 }));
  await writer.flush();
  const merged = new MergeWaiter(h.client).wait(name, 's0', 4);
  await eventually(async () => (await timerSummaries(h.tables.handle(name))).includes('awaitMerged s0 seq 4: answer "not yet" if still unmerged'), 'the awaitMerged bound started with its summary');
  await h.tables.resume(name);
  expect((await merged).merged).toBe(true);
});
