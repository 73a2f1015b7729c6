import { afterAll, beforeAll, expect, test } from 'vitest';
import { TableWriter, workflowArgsFor } from '../../src/client/table-writer';
import { shardNames } from '../../src/messages/names';
import { createTableMeta } from '../../src/storage/generation-store';
import { sleep } from '../../src/util/sleep';
import { eventually, startHarness, uniqueName, type Harness } from '../support/harness';
import { activityRuns } from '../support/history';

// Plans go at the default activity priority, behind merge preparations and commits
// (workflows/run-unit.ts); one that no worker took within its kind's maxTurnWaitSecs is
// asked for again at the merge preparations' priority. The test holds the worker's only
// activity slot with another table's merge preparation for longer than that bound and
// asks for an index right then (a bump makes it due now): the first plan cannot be
// taken in time, so the history must show it timed out before start and a second one,
// at priority 2, that ran. Without the second ask the first plan just waits for the slot
// and runs late, and the shape check fails.

const WAIT_SECS = 3;
const HOLD_MS = (WAIT_SECS + 4) * 1000;

let holding = false;
let held: () => void = () => undefined;

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    name: 'plan-aging',
    workers: 0,
    deps: {
      faults: {
        freezeProgress: async (p) => {
          if (!holding || p.activity !== 'prepareMerge' || p.phase !== 'encode') return;
          holding = false;
          held();
          await sleep(HOLD_MS);
        },
      },
    },
  });
  await h.addWorker(undefined, { maxConcurrentActivities: 1 });
});
afterAll(async () => h?.close());

test('an index plan no worker could take in maxTurnWaitSecs is asked for again at priority 2 and runs', async () => {
  const table = uniqueName('indexed');
  const meta = await createTableMeta(h.dataRoot, { name: table, key: 'id', shards: shardNames(1), indices: [{ column: 'id', type: 'btree' }] });
  await h.tables.start({ ...workflowArgsFor(meta), policy: { directMergeMaxBytes: 0, periodSecs: { optimize: 0, index: 3600, gc: 0 }, maxTurnWaitSecs: { merge: WAIT_SECS, index: WAIT_SECS } } });
  const writer = await TableWriter.open(h.tables, h.dataRoot, table);
  await writer.write('s0', [{ id: 1, v: 'a' }]);
  await eventually(async () => (await h.tables.state(table)).counters.turns.merge > 0 || null, 'the indexed table merged', 30_000, 100);

  // Another table's merge preparation takes the only slot and keeps it for HOLD_MS.
  const blockerMeta = await createTableMeta(h.dataRoot, { name: uniqueName('blocker'), key: 'id', shards: shardNames(1), indices: [] });
  await h.tables.start({ ...workflowArgsFor(blockerMeta), policy: { directMergeMaxBytes: 0 } });
  const blocker = await TableWriter.open(h.tables, h.dataRoot, blockerMeta.name);
  const slotHeld = new Promise<void>((resolve) => (held = resolve));
  holding = true;
  await blocker.write('s0', [{ id: 1, v: 'b' }]);
  await slotHeld;

  const t0 = Date.now();
  await h.tables.bump(table, { kind: 'index', reason: 'test' });
  try {
    await eventually(async () => (await h.tables.state(table)).counters.turns.index > 0 || null, 'the index built', 60_000, 250);
  } finally {
    await writer.close();
    await blocker.close();
  }

  const plans = (await activityRuns(h.tables.handle(table))).filter((r) => r.type === 'planIndex');
  const shape = plans.map((r) => `${r.priorityKey}:${r.outcome}`);
  expect(shape, JSON.stringify(plans.map((r) => [r.priorityKey, r.outcome, r.scheduledAtMs - t0, r.startedAtMs ? r.startedAtMs - t0 : null]))).toEqual(['0:timedOut', '2:completed']);
  // The second ask went out when the bound ran out, not when the slot freed.
  expect(plans[1]!.scheduledAtMs - plans[0]!.scheduledAtMs).toBeLessThan(HOLD_MS - 1000);
}, 120_000);
