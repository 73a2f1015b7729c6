import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import { arrow, writeIpcFileAtomic, type ArrowTable } from '../../src/storage/arrow';
import { tableFromRows } from '../../src/storage/records';
import { shardOfKey } from '../../src/storage/routing';
import { generateRows } from '../../src/writer';
import { startHarness, uniqueName, type Harness } from '../support/harness';
import { readTableRows } from '../support/lance-read';

// The command line of the README, as operators run it, against the real server: the
// harness's worker serves the task queue the CLI is pointed at.

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ name: 'cli' });
});
afterAll(async () => h?.close());

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

const pkg = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string; bin: { turnstile: string } };
/** The `turnstile` command exactly as installed: package.json's bin entry (it runs the compiled dist/cli.js). */
const BIN = path.join(PROJECT_ROOT, pkg.bin.turnstile);

function exec(file: string, args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    execFile(file, args, { env: { ...process.env, TEMPORAL_ADDRESS: h.address, TURNSTILE_DATA: h.dataRoot, TURNSTILE_TASK_QUEUE: h.taskQueue, ...env }, timeout: 90_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** Runs the CLI against the harness's server, data root and task queue (or `env`'s). */
const turnstileWith = (env: Record<string, string>, ...args: string[]): Promise<Run> => exec(process.execPath, [BIN, ...args], env);

const turnstile = (...args: string[]): Promise<Run> => turnstileWith({}, ...args);

/** A refusal of bad input: exit 2 and exactly one line on stderr. */
function expectRefused(r: Run, pattern: RegExp): void {
  expect(r.code, r.stderr).toBe(2);
  const lines = r.stderr.trim().split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(pattern);
}

/** An Arrow IPC file as any arrow-js user writes one (no checksum sidecar). */
function arrowFile(name: string, table: ArrowTable): string {
  const file = path.join(h.dataRoot, `${name}.arrow`);
  fs.writeFileSync(file, arrow.tableToIPC(table, 'file'));
  return file;
}

test('create, write, wait-merged, status --json, pause/resume and list through the CLI', async () => {
  const name = uniqueName('cli');
  const policyFile = path.join(h.dataRoot, `${name}-policy.json`);
  fs.writeFileSync(policyFile, JSON.stringify({ maxTurnWaitSecs: { optimize: 7 } }));
  expect((await turnstile('table', 'create', name, '--key', 'id', '--shards', '2', '--policy', policyFile)).code).toBe(0);
  const w = await turnstile('write', name, '--shard', 's0', '--rows', '50', '--keys', '0..400');
  expect(w.stdout).toMatch(new RegExp(`^sealed ${name}/s0 seq 1 \\(50 rows\\)`));
  const m = await turnstile('wait-merged', name, '--shard', 's0', '--seq', '1', '--timeout', '60');
  expect(m.code, m.stderr).toBe(0);
  expect(m.stdout).toMatch(/in table version \d+/);

  // --file: an Arrow IPC file of rows that route to s1 is sealed as one generation.
  const file = path.join(h.dataRoot, `${name}-rows.arrow`);
  await writeIpcFileAtomic(file, tableFromRows(generateRows({ keys: [0, 400], count: 30, shard: 's1', shards: ['s0', 's1'], seed: 3 }), 'id'));
  expect((await turnstile('write', name, '--shard', 's1', '--file', file)).stdout).toMatch(new RegExp(`^sealed ${name}/s1 seq 1 \\(30 rows\\)`));
  expect((await turnstile('wait-merged', name, '--shard', 's1', '--seq', '1', '--timeout', '60')).code).toBe(0);
  // The same file into the other shard is refused: a key belongs to one shard.
  expectRefused(await turnstile('write', name, '--shard', 's0', '--file', file), /^turnstile: key \d+ belongs to shard s1, not s0 /);

  const s = JSON.parse((await turnstile('status', name, '--json')).stdout);
  for (const key of ['table', 'version', 'paused', 'pausedKinds', 'writePressure', 'backlog', 'shards', 'turn', 'preparing', 'queue', 'counters']) expect(s).toHaveProperty(key);
  expect(s.shards).toEqual([
    expect.objectContaining({ shard: 's0', sealedThroughSeq: 1, mergedThroughSeq: 1 }),
    expect.objectContaining({ shard: 's1', sealedThroughSeq: 1, mergedThroughSeq: 1 }),
  ]);
  for (const key of ['turns', 'stalls', 'retries', 'maxTurnWaitSecs']) expect(s.counters).toHaveProperty(key);
  expect(s.counters.turns.merge).toBe(2);
  expect(s.policy.maxTurnWaitSecs).toEqual({ merge: 60, optimize: 7, index: 300, gc: 600 });

  expect((await turnstile('pause', name, '--kind', 'merge')).stdout).toMatch(/paused kind merge/);
  await expect.poll(async () => JSON.parse((await turnstile('status', name, '--json')).stdout).pausedKinds, { timeout: 20_000 }).toEqual(['merge']);
  expect((await turnstile('resume', name, '--kind', 'merge')).code).toBe(0);
  expect((await turnstile('bump', name, '--kind', 'optimize', '--reason', 'cli test', '--for', '30')).stdout).toMatch(/bumped optimize/);

  const list = JSON.parse((await turnstile('table', 'list', '--json')).stdout) as { table: string; workflow: string }[];
  expect(list.find((t) => t.table === name)).toMatchObject({ workflow: 'running' });
  expect((await turnstile('status', name)).stdout).toMatch(new RegExp(`^table ${name} `));

  // policy --set changes the live policy and is kept in table.json on top of the
  // create-time override, so a workflow started afresh after a terminate has it too.
  const setFile = path.join(h.dataRoot, `${name}-set.json`);
  fs.writeFileSync(setFile, JSON.stringify({ maxTurnWaitSecs: { merge: 45 }, softBacklog: 3 }));
  const set = await turnstile('policy', name, '--set', setFile);
  expect(set.code, set.stderr).toBe(0);
  expect(JSON.parse(set.stdout)).toMatchObject({ softBacklog: 3, maxTurnWaitSecs: { merge: 45, optimize: 7 } });
  const meta = JSON.parse(fs.readFileSync(path.join(h.dataRoot, '_turnstile', name, 'table.json'), 'utf8'));
  expect(meta.policy).toEqual({ maxTurnWaitSecs: { optimize: 7, merge: 45 }, softBacklog: 3 });
  await h.client.workflow.getHandle(`table/${name}`).terminate('cli test: start afresh');
  expect((await turnstile('write', name, '--shard', 's0', '--rows', '10', '--keys', '0..400')).code).toBe(0);
  const fresh = JSON.parse((await turnstile('status', name, '--json')).stdout);
  expect(fresh.policy.maxTurnWaitSecs).toEqual({ merge: 45, optimize: 7, index: 300, gc: 600 });
  expect(fresh.policy.softBacklog).toBe(3);
});

test('bad input exits non-zero with one line naming the field and the accepted range', async () => {
  const name = uniqueName('clibad');
  expect((await turnstile('table', 'create', name, '--key', 'id')).code).toBe(0);
  expectRefused(await turnstile('bump', name, '--kind', 'compact', '--reason', 'x'), /--kind: "compact" is not a kind; accepted: merge, optimize, index, gc/);
  expectRefused(await turnstile('bump', name, '--kind', 'merge', '--class', '7', '--reason', 'x'), /--class: "7" is not an integer in \[1, 4\]/);
  expectRefused(await turnstile('wait-merged', name, '--shard', 's0', '--seq', '-1'), /--seq: "-1" is not an integer in \[0, /);
  expectRefused(await turnstile('write', name, '--shard', 's9', '--rows', '5'), /--shard: "s9" is not a shard of/);
  expectRefused(await turnstile('status', uniqueName('nosuch')), /no such table workflow; create the table with "turnstile table create"/);
  expectRefused(await turnstile('status', 'Bad/Name'), /^turnstile: table: "Bad\/Name" is not valid; accepted: /);
  expectRefused(await turnstile('table', 'create', name, '--key', 'id'), /already exists/);
  const badCreate = path.join(h.dataRoot, 'bad-create-policy.json');
  fs.writeFileSync(badCreate, JSON.stringify({ softBacklog: 'lots' }));
  expectRefused(await turnstile('table', 'create', uniqueName('clibad'), '--key', 'id', '--policy', badCreate), /^turnstile: --policy: softBacklog: must be an integer in \[0, 1000000\]$/);
  const bad = path.join(h.dataRoot, 'bad-policy.json');
  fs.writeFileSync(bad, JSON.stringify({ bogus: 1, maxTurnWaitSecs: { optimize: 0 } }));
  expectRefused(await turnstile('policy', name, '--set', bad), /^turnstile: policy: maxTurnWaitSecs.optimize: must be an integer in \[1, 86400\]; bogus: unknown key$/);
  // The workflow is unharmed.
  expect(JSON.parse((await turnstile('status', name, '--json')).stdout).table).toBe(name);

  // The parser's own refusals are one line with exit 2 as well, naming the command.
  expectRefused(await turnstile('status', name, '--jsn'), /^turnstile: status: unknown option '--jsn' \(Did you mean --json\?\)$/);
  expectRefused(await turnstile('status'), /^turnstile: status: missing required argument 'NAME'$/);
  expectRefused(await turnstile('bump', name, '--kind'), /^turnstile: bump: option '--kind <K>' argument missing$/);
  expectRefused(await turnstile('frobnicate'), /^turnstile: unknown command 'frobnicate'; accepted: dev, cluster, .*, status, /);
  expectRefused(await turnstile('table'), /^turnstile: table: expected a command: create, adopt, reset, list; see "turnstile table --help"$/);
  expectRefused(await turnstile('write', name, '--rows', '5'), /^turnstile: --shard: required with --rows /);
});

test('--help for every command and --version, on stdout with exit 0', async () => {
  const top = await turnstile('--help');
  expect(top.code).toBe(0);
  expect(top.stdout).toMatch(/^Usage: turnstile \[options\] \[command\]/);
  const commands = ['dev', 'worker', 'table create', 'table list', 'table reset', 'status', 'write', 'wait-merged', 'bump', 'pause', 'resume', 'policy'];
  for (const c of commands) expect(top.stdout).toMatch(new RegExp(`^  ${c.split(' ')[0]}\\b`, 'm'));
  for (const c of commands) {
    const r = await turnstile(...c.split(' '), '--help');
    expect({ code: r.code, stderr: r.stderr }, c).toEqual({ code: 0, stderr: '' });
    expect(r.stdout, c).toMatch(new RegExp(`^Usage: turnstile ${c} `));
  }
  expect((await turnstile('write', '--help')).stdout).toMatch(/--file <F\.arrow> +an Arrow IPC file; columns are cast losslessly/);
  const v = await turnstile('--version');
  expect({ code: v.code, stdout: v.stdout }).toEqual({ code: 0, stdout: `${pkg.version}\n` });
});

test('write --file without --shard routes every row to its shard, one generation each, casting tableFromArrays columns', async () => {
  const name = uniqueName('cliroute');
  const shards = ['s0', 's1', 's2'];
  expect((await turnstile('table', 'create', name, '--key', 'id', '--shards', '3')).code).toBe(0);
  // The first seal fixes the schema {id: Int64, value: Utf8, n: Float64}.
  const first = generateRows({ keys: [0, 300], count: 20, shard: 's0', shards, seed: 5 });
  expect((await turnstile('write', name, '--shard', 's0', '--rows', '20', '--keys', '0..300', '--seed', '5')).code).toBe(0);

  // What arrow-js makes of plain arrays: Int32 keys, dictionary-encoded strings.
  const ids = Array.from({ length: 90 }, (_, i) => 1000 + i);
  const input = arrow.tableFromArrays({ id: Int32Array.from(ids), value: ids.map((i) => `f${i}`), n: Float64Array.from(ids, (i) => i / 4) });
  expect(input.schema.fields.map((f) => String(f.type))).toEqual(['Int32', 'Dictionary<Int32, Utf8>', 'Float64']);
  const w = await turnstile('write', name, '--file', arrowFile(`${name}-mixed`, input));
  expect({ code: w.code, stderr: w.stderr }).toEqual({ code: 0, stderr: '' });
  const owned = (s: string) => ids.filter((i) => shardOfKey(i, shards) === s).length;
  expect(w.stdout).toBe(`sealed ${name}/s0 seq 2 (${owned('s0')} rows)\nsealed ${name}/s1 seq 1 (${owned('s1')} rows)\nsealed ${name}/s2 seq 1 (${owned('s2')} rows)\n`);
  for (const [shard, seq] of [['s0', '2'], ['s1', '1'], ['s2', '1']] as const) {
    const m = await turnstile('wait-merged', name, '--shard', shard, '--seq', seq, '--timeout', '60');
    expect({ code: m.code, stderr: m.stderr }).toEqual({ code: 0, stderr: '' });
  }
  const { count, rows } = await readTableRows(h.dataRoot, name);
  expect(count).toBe(20 + 90);
  for (const r of first) expect(rows.get(String(r.id))).toMatchObject({ id: r.id, value: r.value, n: r.n, _seq: 1 });
  for (const i of ids) expect(rows.get(String(i))).toMatchObject({ id: i, value: `f${i}`, n: i / 4, _seq: shardOfKey(i, shards) === 's0' ? 2 : 1 });

  // Bad files exit 2 with one line, and seal nothing.
  const refused = (file: string) => turnstile('write', name, '--file', file);
  expectRefused(await refused(arrowFile(`${name}-badtype`, arrow.tableFromArrays({ id: Int32Array.from([1]), value: ['a'], n: BigInt64Array.from([1n]) }))), /^turnstile: --file: column n: Int64 does not cast losslessly to the table's Float64$/);
  const nullKey = new arrow.Table({ id: arrow.vectorFromArray([5n, null], new arrow.Int64()), value: arrow.vectorFromArray(['a', 'b']), n: arrow.vectorFromArray([1, 2]) });
  expectRefused(await refused(arrowFile(`${name}-nullkey`, nullKey)), /^turnstile: --file: key column id: row 1 has a null key$/);
  expectRefused(await turnstile('write', name, '--shard', 's1', '--file', arrowFile(`${name}-nullkey`, nullKey)), /^turnstile: --file: key column id: row 1 has a null key$/);
  const garbage = path.join(h.dataRoot, `${name}-garbage.arrow`);
  fs.writeFileSync(garbage, 'ARROW1 these bytes are not an Arrow file ARROW1');
  expectRefused(await refused(garbage), /^turnstile: --file: .*garbage\.arrow: not a readable Arrow IPC file/);
  expectRefused(await refused(path.join(h.dataRoot, 'no-such.arrow')), /^turnstile: --file: cannot read .*no-such\.arrow: no such file or directory$/);
  expectRefused(await refused(h.dataRoot), /^turnstile: --file: cannot read .*: illegal operation on a directory/);
  const s = JSON.parse((await turnstile('status', name, '--json')).stdout) as { shards: { shard: string; sealedThroughSeq: number }[] };
  expect(s.shards.map((x) => x.sealedThroughSeq)).toEqual([2, 1, 1]);
});

test('the bin entry loads only what a command needs: status no Arrow, lancedb, worker or Temporal client; write one apache-arrow', async () => {
  const name = uniqueName('clibin');
  expect((await turnstile('table', 'create', name, '--key', 'id')).code).toBe(0);
  const traced = async (...args: string[]) => {
    const out = path.join(h.dataRoot, `${uniqueName('trace')}.json`);
    const r = await turnstileWith({ NODE_OPTIONS: `--import ${path.join(PROJECT_ROOT, 'test', 'support', 'fixtures', 'trace-packages.mjs')}`, TURNSTILE_TRACE_PACKAGES: out }, ...args);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    return { stdout: r.stdout, packages: JSON.parse(fs.readFileSync(out, 'utf8')) as Record<string, string[]> };
  };
  const w = await traced('write', name, '--shard', 's0', '--rows', '10');
  expect(w.stdout).toMatch(new RegExp(`^sealed ${name}/s0 seq 1 \\(10 rows\\)`));
  expect(w.packages['apache-arrow']).toHaveLength(1);
  const s = await traced('status', name);
  expect(s.stdout).toMatch(new RegExp(`^table ${name} .*\\nturn: `));
  // status reads through ReadClient (raw gRPC): the SDK client's proto root alone takes ~400 ms to load.
  expect(Object.keys(s.packages)).toContain('@grpc/grpc-js');
  for (const heavy of ['apache-arrow', '@lancedb/lancedb', '@temporalio/worker', '@temporalio/client', '@temporalio/proto', '@temporalio/workflow']) expect(Object.keys(s.packages)).not.toContain(heavy);
});

test('write --rows shows progress on a terminal only', async () => {
  const name = uniqueName('clitty');
  expect((await turnstile('table', 'create', name, '--key', 'id')).code).toBe(0);
  // Not a terminal (captured, as above): the result line only.
  const quiet = await turnstile('write', name, '--shard', 's0', '--rows', '300');
  expect({ stdout: quiet.stdout, stderr: quiet.stderr }).toEqual({ stdout: `sealed ${name}/s0 seq 1 (300 rows)\n`, stderr: '' });
  // A pseudo-terminal (util-linux `script`), where stdout and stderr share the terminal.
  const tty = await exec('script', ['-qec', `${process.execPath} ${BIN} write ${name} --shard s0 --rows 300`, '/dev/null'], {});
  expect(tty.code, tty.stdout).toBe(0);
  expect(tty.stdout).toContain(`generating 300 rows for ${name}/s0 (0 s)`);
  expect(tty.stdout).toMatch(new RegExp(`sealing 300 rows into ${name}/s0 \\(\\d+ s\\)\\r\\x1b\\[2Ksealed ${name}/s0 seq 2 \\(300 rows\\)`));
});

test('`turnstile worker` serves a task queue on its own and stops cleanly on SIGTERM', async () => {
  const taskQueue = uniqueName('tq-cli-worker');
  const env = { ...process.env, TEMPORAL_ADDRESS: h.address, TURNSTILE_DATA: h.dataRoot, TURNSTILE_TASK_QUEUE: taskQueue };
  const worker = spawn(process.execPath, [BIN, 'worker'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  worker.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => worker.on('exit', (code) => r(code)));
  try {
    await expect.poll(() => out, { timeout: 60_000 }).toMatch(new RegExp(`worker on ${h.address} task queue ${taskQueue}`));
    // The compiled worker loads the workflow bundle the build wrote; it does not run webpack at start.
    expect(out).toMatch(/workflow bundle: prebuilt \S+dist\/workflow-bundle\.js/);
    const name = uniqueName('cliw');
    const run = (...args: string[]) => turnstileWith({ TURNSTILE_TASK_QUEUE: taskQueue }, ...args);
    expect((await run('table', 'create', name, '--key', 'id')).code).toBe(0);
    expect((await run('write', name, '--shard', 's0', '--rows', '20')).code).toBe(0);
    const m = await run('wait-merged', name, '--shard', 's0', '--seq', '1', '--timeout', '60');
    expect(m.stdout, m.stderr).toMatch(/merged .* seq 1/);
  } finally {
    worker.kill('SIGTERM');
  }
  expect(await exited).toBe(0);
});

test('requests that make no sense for the table exit 2 with one line; a seal refused at hardBacklog exits 75', async () => {
  const name = uniqueName('clitable');
  const policyFile = path.join(h.dataRoot, `${name}-hard.json`);
  // Merges paused below: one sealed generation reaches hardBacklog.
  fs.writeFileSync(policyFile, JSON.stringify({ softBacklog: 0, hardBacklog: 1, maxWriteDelayMs: 0 }));
  expect((await turnstile('table', 'create', name, '--key', 'id', '--shards', '2', '--policy', policyFile)).code).toBe(0);
  expectRefused(await turnstile('wait-merged', name, '--shard', 's9', '--seq', '1', '--timeout', '60'), new RegExp(`^turnstile: awaitMerged: shard: "s9" is not a shard of ${name}; accepted: s0, s1$`));
  expectRefused(await turnstile('wait-merged', name, '--shard', 's0', '--seq', '9000000', '--timeout', '60'), /^turnstile: awaitMerged: seq: 9000000 is beyond anything plausible for .*\/s0 \(sealed through 0\); accepted: at most 100000$/);
  expectRefused(await turnstile('bump', name, '--unit', 'merge/s1', '--reason', 'x'), new RegExp(`^turnstile: bump: unit: "merge/s1" is not a unit of ${name} now; units now: none$`));
  expectRefused(await turnstile('resume', name), new RegExp(`^turnstile: resume: ${name} is not paused$`));
  expect((await turnstile('pause', name, '--kind', 'merge')).code).toBe(0);
  await expect.poll(async () => JSON.parse((await turnstile('status', name, '--json')).stdout).pausedKinds, { timeout: 20_000 }).toEqual(['merge']);
  expectRefused(await turnstile('pause', name, '--kind', 'merge'), new RegExp(`^turnstile: pause: kind merge of ${name} is already paused$`));

  // Payload limits: refused before anything is sent.
  const manyKeys = path.join(h.dataRoot, `${name}-keys.json`);
  fs.writeFileSync(manyKeys, JSON.stringify(Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`, i]))));
  expectRefused(await turnstile('policy', name, '--set', manyKeys), /^turnstile: --set: .*-keys\.json: more than 1000 keys; accepted: at most 1000$/);
  const huge = path.join(h.dataRoot, `${name}-huge.json`);
  fs.writeFileSync(huge, JSON.stringify({ softBacklog: 1, pad: 'x'.repeat(600 * 1024) }));
  expectRefused(await turnstile('policy', name, '--set', huge), /^turnstile: --set: .*-huge\.json is \d+ bytes; accepted: at most 524288 \(Temporal's payload limit\)$/);

  expect((await turnstile('write', name, '--shard', 's0', '--rows', '10')).code).toBe(0);
  await expect.poll(async () => JSON.parse((await turnstile('status', name, '--json')).stdout).backlog, { timeout: 20_000 }).toBe(1);
  const refused = await turnstile('write', name, '--shard', 's0', '--rows', '10');
  expect(refused.code, refused.stderr).toBe(75);
  expect(refused.stderr).toMatch(new RegExp(`^turnstile: table ${name}: backlog 1 has reached hardBacklog 1; retry later\\n$`));
  const s = JSON.parse((await turnstile('status', name, '--json')).stdout);
  expect(s.shards.map((x: { sealedThroughSeq: number }) => x.sealedThroughSeq)).toEqual([1, 0]);
  expect(s.counters.rejectedSignals).toBe(0);
});
