import { afterAll, beforeAll, expect, test } from 'vitest';
import { inject } from 'vitest';
import { TableClient } from '../../src/client/table-client';
import { workflowArgsFor } from '../../src/client/table-writer';
import { shardNames } from '../../src/messages/names';
import { createTableMeta } from '../../src/storage/generation-store';
import { createWorker } from '../../src/worker/create-worker';
import { testWorkflowBundle } from '../support/workflow-bundle';
import { eventually, startHarness, uniqueName, type Harness } from '../support/harness';

// The SDK's workflow stack traces are off by default (src/worker/workflow-stack-traces.ts):
// the `__stack_trace` query (the UI's Stack Trace tab) then names no frame, while the
// table runs as usual. worker.workflowStackTraces brings the frames back. Also guards the
// way it is switched off: should the SDK freeze the workflow context before the bundle's
// first line runs, that line would throw and no table would start.

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ name: 'stack-traces' });
});
afterAll(async () => h?.close());

async function startTable(tables: TableClient): Promise<string> {
  const table = uniqueName('stacks');
  const meta = await createTableMeta(h.dataRoot, { name: table, key: 'id', shards: shardNames(1), indices: [] });
  await tables.start({ ...workflowArgsFor(meta), policy: { periodSecs: { optimize: 0, index: 0, gc: 0 } } });
  // Up: its first scan done, so the workflow has run and waits on its promises.
  await eventually(async () => !(await tables.status(table)).snapshot.running, `table ${table}: first scan done`);
  return table;
}

const stackTrace = (tables: TableClient, table: string) => tables.handle(table).query<string>('__stack_trace');

test('off by default: the table runs, and its stack trace names no frame', async () => {
  const table = await startTable(h.tables);
  const trace = await stackTrace(h.tables, table);
  expect(trace).not.toMatch(/\bat\b/);
  expect(trace).not.toMatch(/table\.ts/);
  const status = await h.tables.status(table);
  expect(status.shards.map((s) => s.shard)).toEqual(['s0']);
});

test('worker.workflowStackTraces: the stack trace names the table workflow\'s own source', async () => {
  const taskQueue = uniqueName('tq-stacks-on');
  const { worker, connection } = await createWorker({
    address: inject('temporalAddress'),
    namespace: 'default',
    taskQueue,
    bundle: await testWorkflowBundle({ stackTraces: true }),
    deps: { dataRoot: h.dataRoot },
    shutdownGraceSecs: 2,
  });
  const run = worker.run();
  try {
    const tables = new TableClient(h.client, taskQueue);
    const table = await startTable(tables);
    const trace = await stackTrace(tables, table);
    expect(trace).toMatch(/workflows\/table\.ts/);
  } finally {
    worker.shutdown();
    await run;
    await connection.close();
  }
});
