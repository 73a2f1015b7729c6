import { afterAll, beforeAll, expect, test } from 'vitest';
import { TableWriter, workflowArgsFor } from '../../src/client/table-writer';
import { shardNames } from '../../src/messages/names';
import { createTableMeta } from '../../src/storage/generation-store';
import { sleep } from '../../src/util/sleep';
import { eventually, startHarness, uniqueName, type Harness } from '../support/harness';
import { activityRuns } from '../support/history';
import { Load } from '../support/load';

// Plans and snapshots go at the default activity priority, behind merge preparations and
// commits (workflows/run-unit.ts). On a worker of one activity slot that nearly always
// has a merge preparation queued when it frees (two tables written without end, one
// preparation each at a time, every one of them 1.5 s long), an index plan no worker
// took within index's maxTurnWaitSecs is asked for again at the merge preparations'
// priority and runs while the load goes on: the index gets built. Without that second
// ask this setup still builds the index, later (the server keeps priorities per task
// queue partition, so a plan alone on its partition gets out now and then); what the
// test pins is the bound.

const WAIT_SECS = 3;
const SLOW_PREPARATION_MS = 1500;

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    name: 'plan-aging',
    workers: 0,
    deps: { faults: { freezeProgress: (p) => (p.activity === 'prepareMerge' && p.phase === 'encode' ? sleep(SLOW_PREPARATION_MS) : undefined) } },
  });
  await h.addWorker(undefined, { maxConcurrentActivities: 1 });
});
afterAll(async () => h?.close());

const BUSY_POLICY = { directMergeMaxBytes: 0, maxConcurrentPreparations: 1, periodSecs: { optimize: 0, index: 0, gc: 0 }, softBacklog: 100_000, hardBacklog: 200_000 };

test('an index plan queued behind a stream of merge work is asked for again, aged, and runs while the stream goes on', async () => {
  const loads: Load[] = [];
  for (let i = 0; i < 2; i++) {
    const meta = await createTableMeta(h.dataRoot, { name: uniqueName(`busy${i}`), key: 'id', shards: shardNames(1), indices: [] });
    await h.tables.start({ ...workflowArgsFor(meta), policy: BUSY_POLICY });
    const load = new Load(await TableWriter.open(h.tables, h.dataRoot, meta.name), { rowsPerGeneration: 200, keySpan: 10_000, pauseMs: 100 });
    load.start();
    loads.push(load);
  }
  await sleep(3000); // the stream of merge work is up

  const table = uniqueName('indexed');
  const meta = await createTableMeta(h.dataRoot, { name: table, key: 'id', shards: shardNames(1), indices: [{ column: 'id', type: 'btree' }] });
  await h.tables.start({ ...workflowArgsFor(meta), policy: { directMergeMaxBytes: 0, periodSecs: { optimize: 0, index: 1, gc: 0 }, maxTurnWaitSecs: { merge: WAIT_SECS, index: WAIT_SECS } } });
  const writer = await TableWriter.open(h.tables, h.dataRoot, table);
  const t0 = Date.now();
  await writer.write('s0', [{ id: 1, v: 'a' }]);
  let built: number | null = null;
  try {
    built = await eventually(async () => ((await h.tables.state(table)).counters.turns.index > 0 ? Date.now() - t0 : null), 'the index built while merge work streams', 60_000, 250);
  } catch (e) {
    const runs = await activityRuns(h.tables.handle(table));
    console.log(JSON.stringify(runs.map((r) => [r.type, r.activityId, r.priorityKey, r.outcome, r.scheduledAtMs - t0, r.startedAtMs ? r.startedAtMs - t0 : null])));
    throw e;
  } finally {
    for (const l of loads) await l.stop();
    await writer.close();
  }

  // Each plan at the default priority was taken within the bound or, not taken in time,
  // asked for again at the merge preparations' priority; the last one ran.
  const plans = (await activityRuns(h.tables.handle(table))).filter((r) => r.type === 'planIndex');
  const shape = plans.map((r) => `${r.priorityKey}:${r.outcome}`);
  for (let i = 0; i < plans.length; i++) {
    if (plans[i]!.outcome === 'timedOut') expect(shape[i + 1], shape.join(' ')).toBe('2:completed');
  }
  expect(shape[0], shape.join(' ')).toMatch(/^0:(completed|timedOut)$/);
  expect(built).not.toBeNull();
}, 180_000);
