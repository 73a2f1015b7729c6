import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTableMeta } from '../../src/storage/generation-store';
import { generateRows } from '../../src/writer';
import { TableWriter } from '../../src/client/table-writer';
import { MergeWaiter } from '../../src/client/merge-waiter';
import { STICKY_QUEUE_TIMEOUT_SECS } from '../../src/worker/create-worker';
import { eventually, startHarness, STORAGES, uniqueName, type Harness } from '../support/harness';
import { commitSummaries } from '../support/history';
import { newestPerKey } from '../support/lance-read';
import { expectRowsExactly } from '../support/expect-exact';
import { recordHistory } from '../support/record-history';

// The whole path once, real on both ends: three generations with overlapping keys are
// sealed on one shard, the demand signal starts the table workflow, the merge lands in a
// real Lance table, and the table holds exactly the newest row per key. On both storage
// backends: a local directory and S3 (SeaweedFS).

describe.each(STORAGES)('on %s storage', (storage) => {
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ name: 'skeleton', storage });
});
afterAll(async () => h?.close());

test('workers keep a table on their sticky queue for STICKY_QUEUE_TIMEOUT_SECS, not the SDK default 10 s', () => {
  expect(STICKY_QUEUE_TIMEOUT_SECS).toBeGreaterThan(10);
  for (const w of h.workers) expect(w.options.stickyQueueScheduleToStartTimeoutMs).toBe(STICKY_QUEUE_TIMEOUT_SECS * 1000);
});

test('three overlapping generations merge into exactly the newest row per key', async () => {
  const table = uniqueName('skel');
  await createTableMeta(h.dataRoot, { name: table, key: 'id', shards: ['s0'], indices: [] });
  const writer = await TableWriter.open(h.tables, h.dataRoot, table);
  const written: { seq: number; rows: Record<string, unknown>[] }[] = [];
  // keys 0..299, 100..399, 200..499: every key in 100..399 is overwritten at least once.
  for (let g = 0; g < 3; g++) {
    const rows = generateRows({ keys: [g * 100, g * 100 + 299], shard: 's0', shards: ['s0'], seed: 7 + g });
    const r = await writer.write('s0', rows);
    written.push({ seq: r.seq, rows });
  }
  expect(await writer.flush()).toEqual({});
  expect(written.map((w) => w.seq)).toEqual([1, 2, 3]);

  const merged = await new MergeWaiter(h.client).wait(table, 's0', 3);
  expect(merged.merged).toBe(true);
  expect(merged.mergedThroughSeq).toBe(3);
  expect(merged.version).toBeGreaterThan(0);

  const model = newestPerKey(written);
  expect(model.size).toBe(500);
  await expectRowsExactly(h.dataRoot, table, model);

  const status = await h.tables.status(table);
  expect(status.shards).toEqual([expect.objectContaining({ shard: 's0', sealedThroughSeq: 3, mergedThroughSeq: 3 })]);
  expect(status.backlog).toBe(0);
  expect(status.counters.turns.merge).toBeGreaterThanOrEqual(1);

  // What the Temporal UI shows: durable search attributes to filter by ...
  const handle = h.tables.handle(table);
  await eventually(async () => {
    const found = [];
    for await (const wf of h.client.workflow.list({ query: `TurnstileTable = '${table}' AND TurnstileBacklog = 0` })) found.push(wf.workflowId);
    return found.length === 1 && found[0] === `table/${table}`;
  }, 'the table listed by its search attributes');
  // ... the current details (served by the worker) as short markdown ...
  const meta = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
  expect(meta.currentDetails).toMatch(new RegExp(`^\\*\\*${table}\\*\\* version \\d+ · backlog 0 · writePressure 0\\.00`));
  expect(meta.currentDetails).toContain('**turn:** free');
  // ... and each commit's summary names the unit and why it won the turn.
  const summaries = await commitSummaries(handle);
  expect(summaries[0]).toMatch(/^merge s0 seq 1-\d: class \d, /);
  if (storage === 'fs') await recordHistory(h.client, handle, 'walking-skeleton');
});
});
