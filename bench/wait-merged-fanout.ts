// Read-your-merges at scale: N `turnstile wait-merged` processes wait on one
// seq of one table while its merges are paused; then merges resume. Reports when each
// process answered, measured from the moment the merge's commit completed (from the
// table's history), and checks that every one printed the table version of that commit.
//
//   npx tsx bench/wait-merged-fanout.ts [--processes 100] [--settle-secs 20]

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { connectClient } from '../src/client/connect';
import { TableClient } from '../src/client/table-client';
import { TableWriter, workflowArgsFor } from '../src/client/table-writer';
import { workflowIdForTable } from '../src/messages/names';
import { PROJECT_ROOT } from '../src/util/project-paths';
import { createTableMeta } from '../src/storage/generation-store';
import { activityRunsOf } from '../test/support/history';
import { stat } from './phases';
import { benchServer, peakRssPerByte, startWorkerProcess, stopProcess } from './support';

const { values: opt } = parseArgs({ options: { processes: { type: 'string', default: '100' }, 'settle-secs': { type: 'string', default: '20' } } });
const N = Number(opt.processes);
const SETTLE_SECS = Number(opt['settle-secs']);
if (!Number.isSafeInteger(N) || N < 1 || N > 1000) throw new Error(`--processes: ${opt.processes} is not an integer in 1..1000`);
if (!Number.isFinite(SETTLE_SECS) || SETTLE_SECS < 0) throw new Error(`--settle-secs: ${opt['settle-secs']} is not a number >= 0`);

interface Answer {
  code: number | null;
  stdout: string;
  stderr: string;
  exitedAtMs: number;
}

async function main(): Promise<void> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-bench-fanout-'));
  const { address, server } = await benchServer(tmp);
  const client = await connectClient({ address, namespace: 'default' });
  const taskQueue = `bench-fanout-${process.pid}`;
  const root = path.join(tmp, 'data');
  const worker = await startWorkerProcess(address, taskQueue, root);
  const table = `fanout-${process.pid}`;
  try {
    const tables = new TableClient(client, taskQueue);
    const meta = await createTableMeta(root, { name: table, key: 'id', shards: ['s0', 's1'], indices: [] });
    await tables.start({ ...workflowArgsFor(meta), policy: { periodSecs: { optimize: 0, index: 0, gc: 0 } } });
    await tables.pause(table, { kind: 'merge' });
    const writer = await TableWriter.open(tables, root, table);
    const sealed = await writer.write('s0', [{ id: 2, value: 'x' }, { id: 4, value: 'y' }]);
    await writer.close();

    const env = { ...process.env, TEMPORAL_ADDRESS: address, TURNSTILE_DATA: root, TURNSTILE_TASK_QUEUE: taskQueue };
    const t0 = Date.now();
    const answers = Array.from({ length: N }, () =>
      new Promise<Answer>((resolve) => {
        const child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'scripts', 'turnstile.mjs'), 'wait-merged', table, '--shard', 's0', '--seq', String(sealed.seq), '--timeout', '600'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
        child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
        child.on('exit', (code) => resolve({ code, stdout, stderr, exitedAtMs: Date.now() }));
      }),
    );
    // Every process loads the client, connects and sends its update meanwhile (on 2 cores
    // a hundred Node starts take a while); one that is not waiting yet still answers.
    await new Promise((r) => setTimeout(r, SETTLE_SECS * 1000));
    const early = await Promise.race([Promise.all(answers).then(() => true), new Promise((r) => setTimeout(() => r(false), 0))]);
    if (early) throw new Error('every wait-merged process returned before merges were resumed: the seq was merged while paused');
    await tables.resume(table, { kind: 'merge' });
    const done = await Promise.all(answers);

    const history = await tables.handle(table).fetchHistory();
    const commit = activityRunsOf(history).find((r) => r.type === 'commitMerge' && r.outcome === 'completed');
    if (!commit?.closedAtMs) throw new Error('no completed commitMerge in the table history');
    const version = (await tables.state(table)).version;
    const right = done.filter((a) => a.code === 0 && a.stdout.includes(`in table version ${version}`)).length;
    const wrong = done.filter((a) => !(a.code === 0 && a.stdout.includes(`in table version ${version}`)));
    const afterMerge = stat(done.map((a) => a.exitedAtMs - commit.closedAtMs!));
    console.log(`wait-merged fan-out: ${N} processes on ${table}/s0 seq ${sealed.seq}, ${os.cpus().length} cores, started ${SETTLE_SECS} s before the resume`);
    console.log(`answered with the right version (${version}): ${right}/${N}`);
    console.log(`commit done -> answer (ms): first ${Math.min(...done.map((a) => a.exitedAtMs - commit.closedAtMs!))}, p50 ${afterMerge.p50}, last ${Math.max(...done.map((a) => a.exitedAtMs - commit.closedAtMs!))}`);
    console.log(`spawn -> last answer: ${((Math.max(...done.map((a) => a.exitedAtMs)) - t0) / 1000).toFixed(1)} s`);
    console.log(`worker: ${peakRssPerByte(worker.pid!, sealed.bytes)}`);
    for (const w of wrong.slice(0, 3)) console.log(`wrong answer: exit ${w.code}: ${(w.stdout + w.stderr).trim().split('\n')[0]}`);
    if (wrong.length > 0) process.exitCode = 1;
  } finally {
    await client.workflow.getHandle(workflowIdForTable(table)).terminate('benchmark done').catch(() => undefined);
    await stopProcess(worker);
    await client.connection.close();
    await server?.stop();
  }
}

void main();
