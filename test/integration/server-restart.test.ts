import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, test } from 'vitest';
import { startDevServer, type DevServer } from '../../src/server/dev-server';
import { freePort } from '../../src/server/ports';
import { connectClient } from '../../src/client/connect';
import { TableClient } from '../../src/client/table-client';
import { TableWriter, workflowArgsFor } from '../../src/client/table-writer';
import { MergeWaiter } from '../../src/client/merge-waiter';
import { createTableMeta, sealGeneration } from '../../src/storage/generation-store';
import { generateRows } from '../../src/writer';
import { createWorker } from '../../src/worker/create-worker';
import { testWorkflowBundle } from '../support/workflow-bundle';
import { installQuietRuntime } from '../../src/worker/runtime';
import { shardNames } from '../../src/messages/names';
import { eventually, uniqueName } from '../support/harness';
import { expectRowsExactly } from '../support/expect-exact';
import { Load } from '../support/load';
import { NO_BINARY, temporalBinary } from '../support/own-server';

// docs/design.md invariant 10 across a server restart: the table's state is Temporal history in the
// server's SQLite file, so a server stopped mid-load and started again on the same
// file carries on where it was, and nothing is lost. This test runs its own server.

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-restart-'));
let server: DevServer | undefined;
afterAll(async () => {
  await server?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('a server restart mid-load loses nothing', async (ctx) => {
  // Against an external server there is nothing of ours to restart.
  const binary = temporalBinary;
  if (!binary) return ctx.skip(NO_BINARY);
  installQuietRuntime();
  const port = await freePort();
  const dbFile = path.join(dir, 'temporal.db');
  const start = () => startDevServer({ binary, dbFile, port, headless: true, logFile: path.join(dir, 'server.log') });
  server = await start();
  const dataRoot = path.join(dir, 'data');
  const taskQueue = uniqueName('tq-restart');
  const client = await connectClient({ address: server.address, namespace: 'default' });
  const tables = new TableClient(client, taskQueue);
  const { worker, connection } = await createWorker({ address: server.address, namespace: 'default', taskQueue, bundle: await testWorkflowBundle(), deps: { dataRoot }, shutdownGraceSecs: 2 });
  const running: Promise<void> = worker.run();
  try {
    const table = uniqueName('restart');
    const meta = await createTableMeta(dataRoot, { name: table, key: 'id', shards: shardNames(2), indices: [] });
    await tables.start({ ...workflowArgsFor(meta), policy: { periodSecs: { optimize: 0, index: 0, gc: 0 }, snapshotIntervalSecs: 2, snapshotMaxIntervalSecs: 4 } });
    const writer = await TableWriter.open(tables, dataRoot, table);
    const load = new Load(writer, { rowsPerGeneration: 200, keySpan: 2000, pauseMs: 0 });
    for (let i = 0; i < 3; i++) for (const s of meta.shards) await load.writeOne(s);
    await eventually(async () => (await tables.status(table)).counters.turns.merge >= 1, 'merging before the restart');

    const t0 = Date.now();
    await server.stop();
    // Seals go on while the server is down (no demand signal can reach it): they are
    // durable in the store, and the periodic snapshot finds them after the restart.
    for (const [i, s] of meta.shards.entries()) {
      const rows = generateRows({ keys: [0, 1999], count: 200, shard: s, shards: meta.shards, seed: 500 + i });
      const sealed = await sealGeneration(dataRoot, table, s, rows);
      load.written.get(s)!.push({ seq: sealed.seq, rows });
    }
    server = await start();
    console.log(`server down and up again in ${Date.now() - t0} ms`);

    await eventually(async () => (await tables.status(table)).table === table, 'the workflow answering again', 60_000, 500);
    const waiter = new MergeWaiter(client);
    const sealed = meta.shards.map((s) => load.sealedThrough(s));
    for (const [i, s] of meta.shards.entries()) await waiter.wait(table, s, sealed[i]!);
    console.log(`everything merged ${Date.now() - t0} ms after the stop`);
    await expectRowsExactly(dataRoot, table, load.model());
  } finally {
    worker.shutdown();
    await running.catch(() => undefined);
    await connection.close();
    await client.connection.close();
  }
}, 180_000);
