import { execFile } from 'node:child_process';
import path from 'node:path';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { expect, inject, test } from 'vitest';
import { workflowIdForTable } from '../../src/messages/names';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import { QUIET_BUNDLER_LOGGER } from '../../src/worker/create-worker';
import { STUCK_TASK_ATTEMPTS } from '../../src/client/busy-retry';
import { useServerClients } from '../support/server-clients';
import { eventually, uniqueName } from '../support/harness';

// `turnstile status` of a table whose workflow task fails on every attempt: no worker
// can answer its query. Instead of asking again for 90 s and then printing the server's
// refusal, the command says at its first refusal what is wrong and where the way out
// is (docs/operations.md, "A table's workflow task keeps failing").

const server = useServerClients();
const turnstile = (taskQueue: string, ...args: string[]): Promise<{ code: number; stderr: string; ms: number }> => {
  const start = Date.now();
  return new Promise((resolve) =>
    execFile(process.execPath, [path.join(PROJECT_ROOT, 'scripts', 'turnstile.mjs'), ...args], { env: { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress'), TURNSTILE_TASK_QUEUE: taskQueue }, timeout: 120_000 }, (err, _stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr, ms: Date.now() - start }),
    ),
  );
};

test('status of a table whose workflow task keeps failing says so in one line, without waiting out the retries', async () => {
  const taskQueue = uniqueName('tq-stuck');
  const table = uniqueName('stuck');
  const workflowBundle = await bundleWorkflowCode({ workflowsPath: path.join(__dirname, 'fixtures', 'failing-table.ts'), logger: QUIET_BUNDLER_LOGGER });
  const worker = await Worker.create({ connection: server.connection, taskQueue, workflowBundle });
  await worker.runUntil(async () => {
    const handle = await server.client.workflow.start('tableWorkflow', { taskQueue, workflowId: workflowIdForTable(table) });
    await eventually(async () => ((await handle.describe()).raw.pendingWorkflowTask?.attempt ?? 0) >= STUCK_TASK_ATTEMPTS, `attempt ${STUCK_TASK_ATTEMPTS} of the failing task`, 90_000, 500);
    const r = await turnstile(taskQueue, 'status', table);
    console.log(`stuck status: exit ${r.code} after ${r.ms} ms: ${r.stderr.trim()}`);
    expect(r.code).not.toBe(0);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`table ${table}: its workflow task failed \\d+ times in a row`));
    expect(lines[0]).toContain('turnstile table reset');
    await handle.terminate('test done');
  });
}, 180_000);
