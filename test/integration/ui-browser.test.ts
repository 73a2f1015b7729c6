import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, expect, test } from 'vitest';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import { startDevServer, type DevServer } from '../../src/server/dev-server';
import { connectClient } from '../../src/client/connect';
import { TableClient } from '../../src/client/table-client';
import { TableWriter } from '../../src/client/table-writer';
import { createTableMeta } from '../../src/storage/generation-store';
import { createWorker } from '../../src/worker/create-worker';
import { testWorkflowBundle } from '../support/workflow-bundle';
import { installQuietRuntime } from '../../src/worker/runtime';
import { generateRows } from '../../src/writer';
import { eventually, uniqueName } from '../support/harness';
import { NO_BINARY, temporalBinary as binary } from '../support/own-server';
import { CHROMIUM, findTool } from '../support/tools';

// The Temporal UI in a real browser (Debian's chromium driven by playwright-core), as an
// operator uses it: a dev server with its UI, a worker, two tables (one with merges
// paused and a backlog, one drained). The list filtered with `TurnstileBacklog > 0`
// shows only the first; its page shows the current details: turn, backlog, queue, drain
// ETA. Screenshots go to test-results/ (gitignored).

const tool = findTool(CHROMIUM);

/**
 * Headless chromium without a GPU. On a loaded 2-core machine its start has crashed
 * (SIGSEGV before the first page, once in a full run): that is the browser's start, not
 * what is tested, so the start is tried up to three times, saying so.
 */
async function launchBrowser(executablePath: string): Promise<Browser> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'], timeout: 60_000 });
    } catch (e) {
      if (attempt === 3) throw e;
      console.warn(`chromium did not start (attempt ${attempt}): ${(e as Error).message.split('\n')[0]}; trying again`);
    }
  }
}
const SHOTS = path.join(PROJECT_ROOT, 'test-results');
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

test('the UI in chromium: filter TurnstileBacklog > 0, open the table, its current details show turn, backlog, queue and drain ETA', async (ctx) => {
  if ('skip' in tool) return ctx.skip(tool.skip);
  if (!binary) return ctx.skip(NO_BINARY);
  installQuietRuntime();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-ui-'));
  cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
  const server: DevServer = await startDevServer({ binary, dbFile: path.join(dir, 'temporal.db'), logFile: path.join(dir, 'server.log') });
  cleanups.push(() => server.stop());
  const dataRoot = path.join(dir, 'data');
  const taskQueue = uniqueName('tq-ui');
  const { worker, connection } = await createWorker({ address: server.address, namespace: 'default', taskQueue, bundle: await testWorkflowBundle(), deps: { dataRoot }, shutdownGraceSecs: 2 });
  const running = worker.run();
  cleanups.push(async () => {
    worker.shutdown();
    await running;
    await connection.close();
  });
  const client = await connectClient({ address: server.address, namespace: 'default' });
  cleanups.push(() => client.connection.close());
  const tables = new TableClient(client, taskQueue);

  // `busy`: merges paused with generations waiting; `idle`: everything merged.
  const [busy, idle] = [uniqueName('busy'), uniqueName('idle')];
  for (const name of [busy, idle]) {
    await createTableMeta(dataRoot, { name, key: 'id', shards: ['s0'], indices: [] });
    const writer = await TableWriter.open(tables, dataRoot, name);
    await writer.write('s0', generateRows({ keys: [0, 99], shard: 's0', shards: ['s0'], seed: 1 }));
    await writer.flush();
    if (name === busy) {
      await tables.pause(name, { kind: 'merge' });
      for (let g = 2; g <= 4; g++) await writer.write('s0', generateRows({ keys: [g * 10, g * 10 + 99], shard: 's0', shards: ['s0'], seed: g }));
      await writer.flush();
    }
  }
  await eventually(async () => (await tables.state(busy)).backlog >= 3 && (await tables.state(idle)).backlog === 0, 'busy backed up, idle drained', 60_000);

  const browser = await launchBrowser(tool.path);
  cleanups.push(() => browser.close());
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  fs.mkdirSync(SHOTS, { recursive: true });

  // The list, filtered as an operator types it into the UI's query box (the URL carries it).
  const query = 'TurnstileBacklog > 0';
  const listUrl = `${server.uiUrl}/namespaces/default/workflows?query=${encodeURIComponent(query)}`;
  // Visibility catches up asynchronously: load the list until the table shows.
  await eventually(async () => {
    await page.goto(listUrl, { waitUntil: 'networkidle' });
    return (await page.getByText(`table/${busy}`).count()) > 0;
  }, 'the busy table in the filtered list', 60_000, 1000).catch(async (e: Error) => {
    await page.screenshot({ path: path.join(SHOTS, 'ui-filtered-list-failed.png'), fullPage: true });
    const api = await (await fetch(`${server.uiUrl}/api/v1/namespaces/default/workflows?query=${encodeURIComponent(query)}`)).text();
    throw new Error(`${e.message} api ${api.slice(0, 600).replace(/\s+/g, " ")} (screenshot test-results/ui-filtered-list-failed.png; page: ${(await page.locator('body').innerText()).slice(0, 400).replace(/\s+/g, ' ')})`);
  });
  await page.screenshot({ path: path.join(SHOTS, 'ui-filtered-list.png'), fullPage: true });
  expect(await page.getByText(`table/${idle}`).count()).toBe(0);
  expect((await page.getByText(/\d+\s*Workflows?/).first().innerText()).replace(/\s+/g, ' ')).toMatch(/^1 Workflow\b/);

  await page.getByText(`table/${busy}`).first().click();
  await page.waitForURL(/\/workflows\/table%2F|\/workflows\/table\//);
  // The UI shows a workflow's current details under "User Metadata" (collapsed at first).
  await page.getByText('User Metadata', { exact: true }).first().click();
  // It renders the markdown in a sandboxed frame of its own: read the frame that has it.
  const text = await eventually(async () => {
    for (const f of page.frames()) {
      const t = await f.locator('body').innerText().catch(() => '');
      if (t.includes('drain ETA:')) return t;
    }
    return null;
  }, 'the current details rendered', 30_000, 500).catch(async (e: Error) => {
    await page.screenshot({ path: path.join(SHOTS, 'ui-table-failed.png'), fullPage: true });
    throw new Error(`${e.message} (screenshot test-results/ui-table-failed.png)`);
  });
  await page.screenshot({ path: path.join(SHOTS, 'ui-table-details.png'), fullPage: true });
  expect(text).toContain(busy);
  expect(text).toMatch(/backlog [3-9]/);
  expect(text).toMatch(/turn:\s*free/);
  expect(text).toMatch(/queue:/);
  expect(text).toContain('paused kinds: merge');
  expect(text).toMatch(/drain ETA:\s*(never at current rates|measuring)/);
}, 120_000);
