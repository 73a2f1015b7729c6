import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as lancedb from '@lancedb/lancedb';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import { removeRecord, writeRecord, type WorkerRecord } from '../../src/worker/registry';
import { startHarness, uniqueName, type Harness } from '../support/harness';

// `table adopt`, `mode` and `shadow-report` as operators run them (the installed
// `turnstile` command), against the real server: the harness's worker serves the task
// queue the CLI is pointed at. The adopted table is written here directly, as an
// outside process writes one.

let h: Harness;
let outside: string;
beforeAll(async () => {
  h = await startHarness({ name: 'adoptcli' });
  outside = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-outside-'));
});
afterAll(async () => {
  await h?.close();
  if (outside) fs.rmSync(outside, { recursive: true, force: true });
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

const pkg = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { bin: { turnstile: string } };
const BIN = path.join(PROJECT_ROOT, pkg.bin.turnstile);

function turnstile(...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env: { ...process.env, TEMPORAL_ADDRESS: h.address, TURNSTILE_DATA: h.dataRoot, TURNSTILE_TASK_QUEUE: h.taskQueue }, timeout: 90_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** A refusal of bad input: exit 2 and exactly one line on stderr. */
function expectRefused(r: Run, pattern: RegExp): void {
  expect(r.code, r.stderr).toBe(2);
  const lines = r.stderr.trim().split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(pattern);
}

/** An outside Lance table `<outside>/<name>.lance` of a few appends. */
async function outsideTable(name: string): Promise<string> {
  const db = await lancedb.connect(outside);
  const rows = (from: number) => Array.from({ length: 20 }, (_, i) => ({ id: from + i, value: `v${from + i}` }));
  const tbl = await db.createTable(name, rows(0));
  for (let b = 1; b < 4; b++) await tbl.add(rows(b * 20));
  return path.join(outside, `${name}.lance`);
}

const metaOf = (name: string): string => path.join(h.dataRoot, '_turnstile', name, 'table.json');

describe('table adopt refuses what is not an adoptable table, writing nothing', () => {
  test('a --uri that is not a NAME.lance directory', async () => {
    const name = uniqueName('adoptbad');
    for (const bad of ['events', '.lance', 'events.lance.bak']) {
      expectRefused(await turnstile('table', 'adopt', name, '--uri', path.join(outside, bad)), /^turnstile: --uri: ".*" is not a Lance table directory; accepted: /);
    }
    expect(fs.existsSync(metaOf(name))).toBe(false);
  });

  test('a --uri where there is no Lance table', async () => {
    const name = uniqueName('adoptmissing');
    expectRefused(await turnstile('table', 'adopt', name, '--uri', path.join(outside, 'missing.lance')), /^turnstile: --uri: no Lance table at /);
    expect(fs.existsSync(metaOf(name))).toBe(false);
  });

  test('a --key naming a column the table lacks', async () => {
    const name = uniqueName('adoptkey');
    const uri = await outsideTable(name.replace(/-/g, '_'));
    expectRefused(await turnstile('table', 'adopt', name, '--uri', uri, '--key', 'nosuch'), /^turnstile: --key: .* has no column nosuch$/);
    expect(fs.existsSync(metaOf(name))).toBe(false);
  });
});

describe('mode', () => {
  test('a MODE other than shadow or active, and a table that is not adopted', async () => {
    const name = uniqueName('gen');
    expect((await turnstile('table', 'create', name, '--key', 'id')).code).toBe(0);
    expectRefused(await turnstile('mode', name, 'bogus'), /MODE: "bogus" is not valid; accepted: shadow, active/);
    expectRefused(await turnstile('mode', name, 'shadow'), /not adopted/);
    expectRefused(await turnstile('shadow-report', name), /^turnstile: shadow-report: table .* is not adopted/);
  });

  test('active is refused while a worker of a release before active mode is live, and accepted once it is gone', async () => {
    const name = uniqueName('adopted');
    const uri = await outsideTable(name.replace(/-/g, '_'));
    const adopted = await turnstile('table', 'adopt', name, '--uri', uri, '--key', 'id');
    expect(adopted.code, adopted.stderr).toBe(0);
    expect(adopted.stdout).toMatch(new RegExp(`^adopted ${uri.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} as table ${name}: shadow mode`));
    expect(JSON.parse(fs.readFileSync(metaOf(name), 'utf8'))).toMatchObject({ name, key: 'id', shards: [], adopted: { uri } });

    // A worker of release 0.2.0, as src/worker/registry.ts records one, kept fresh the way a worker does.
    const old: WorkerRecord = {
      identity: `old-worker-${name}`,
      host: os.hostname(),
      pid: process.pid,
      taskQueue: h.taskQueue,
      buildId: '0.2.0-abcdef123456',
      budgetBytes: 1 << 30,
      cacheBytes: 0,
      reservedBytes: 0,
      claimBytes: 0,
      running: [],
      waiting: 0,
      startedAtMs: Date.now(),
      lastSeenMs: Date.now(),
    };
    // The last write is awaited before the record is removed: one still in flight would
    // bring the record back after the removal.
    let writing: Promise<void> = writeRecord(h.dataRoot, { ...old, lastSeenMs: Date.now() });
    await writing;
    const timer = setInterval(() => {
      writing = writing.then(() => writeRecord(h.dataRoot, { ...old, lastSeenMs: Date.now() }));
    }, 1000);
    try {
      expectRefused(await turnstile('mode', name, 'active'), /0\.2\.0-abcdef123456/);
      // Shadow is always accepted.
      const shadow = await turnstile('mode', name, 'shadow');
      expect(shadow.code, shadow.stderr).toBe(0);
    } finally {
      clearInterval(timer);
    }
    await writing;
    await removeRecord(h.dataRoot, old.identity);
    const active = await turnstile('mode', name, 'active');
    expect(active.code, active.stderr).toBe(0);
    expect(active.stdout.trim()).toBe(`table ${name}: mode active`);
    await expect.poll(async () => JSON.parse((await turnstile('status', name, '--json')).stdout).adopted?.mode, { timeout: 20_000 }).toBe('active');
  });
});

describe('shadow-report', () => {
  test('prints the report of an adopted table, and --json has the documented fields', async () => {
    const name = uniqueName('report');
    const uri = await outsideTable(name.replace(/-/g, '_'));
    expect((await turnstile('table', 'adopt', name, '--uri', uri)).code).toBe(0);
    // The workflow's first look at the table.
    await expect.poll(async () => JSON.parse((await turnstile('status', name, '--json')).stdout).adopted?.observed?.rows, { timeout: 30_000 }).toBe(80);

    const text = await turnstile('shadow-report', name);
    expect(text.code, text.stderr).toBe(0);
    const lines = text.stdout.trim().split('\n');
    expect(lines[0]).toMatch(new RegExp(`^table ${name} \\(.*${path.basename(uri).replace('.', '\\.')}\\), mode shadow, log since `));
    expect(text.stdout).toMatch(/the table: version \d+, \d+ commits since the first look \(0 by Turnstile\)/);
    expect(text.stdout).toMatch(/fragments 4 now \(4 small\)/);
    expect(text.stdout).toMatch(/compactions someone else ran: 0/);
    for (const kind of ['optimize', 'index', 'gc']) expect(text.stdout).toMatch(new RegExp(`^  ${kind}\\s+decided \\d+, carried out 0;`, 'm'));

    const json = await turnstile('shadow-report', name, '--json');
    expect(json.code, json.stderr).toBe(0);
    const r = JSON.parse(json.stdout);
    expect(Object.keys(r).sort()).toEqual(['mode', 'nowMs', 'sinceMs', 'table', 'table_', 'turnstile', 'uri'].sort());
    expect(r).toMatchObject({ table: name, uri, mode: 'shadow' });
    expect(r.sinceMs).toBeLessThanOrEqual(r.nowMs);
    expect(Object.keys(r.table_).sort()).toEqual(
      ['version', 'commitsSinceFirstLook', 'turnstileCommits', 'versionsKept', 'oldestVersionAgeSecs', 'fragments', 'smallFragments', 'fragmentsMax', 'fragmentsMin', 'rows', 'bytes', 'outsideCompactions'].sort(),
    );
    const tbl = await (await lancedb.connect(outside)).openTable(name.replace(/-/g, '_'));
    expect(r.table_).toMatchObject({ version: await tbl.version(), versionsKept: (await tbl.listVersions()).length, rows: 80, fragments: 4, smallFragments: 4, turnstileCommits: 0, outsideCompactions: 0 });
    expect(r.table_.fragmentsMin).toBeLessThanOrEqual(4);
    expect(r.table_.fragmentsMax).toBeGreaterThanOrEqual(4);
    expect(Object.keys(r.turnstile).sort()).toEqual(['commitConflicts', 'perKind', 'recent']);
    for (const kind of ['optimize', 'index', 'gc']) {
      expect(Object.keys(r.turnstile.perKind[kind]).sort()).toEqual(['carriedOut', 'decided', 'predictedBytesRecent', 'recent']);
      expect(r.turnstile.perKind[kind].carriedOut).toBe(0);
      expect(r.turnstile.perKind[kind].recent).toBeLessThanOrEqual(r.turnstile.perKind[kind].decided);
    }
    expect(r.turnstile.commitConflicts).toBe(0);
    expect(Array.isArray(r.turnstile.recent)).toBe(true);
  });

  test("shadow mode decides and commits nothing; active mode carries the decision out, and the report counts it as Turnstile's", async () => {
    const name = uniqueName('shadow');
    const lanceName = name.replace(/-/g, '_');
    const uri = await outsideTable(lanceName);
    const policyFile = path.join(outside, `${name}-policy.json`);
    fs.writeFileSync(policyFile, JSON.stringify({ compactAtSmallFragments: 2 }));
    expect((await turnstile('table', 'adopt', name, '--uri', uri, '--policy', policyFile)).code).toBe(0);
    const tbl = await (await lancedb.connect(outside)).openTable(lanceName);
    const version = await tbl.version();
    const report = async () => JSON.parse((await turnstile('shadow-report', name, '--json')).stdout);

    await expect.poll(async () => (await report()).turnstile.perKind.optimize.decided, { timeout: 60_000, interval: 2_000 }).toBeGreaterThanOrEqual(1);
    const shadow = await report();
    expect(shadow.turnstile.perKind.optimize.carriedOut).toBe(0);
    expect(shadow.turnstile.recent.find((d: { kind: string }) => d.kind === 'optimize')).toMatchObject({ kind: 'optimize', carriedOut: false, fragments: 4 });
    await tbl.checkoutLatest();
    expect(await tbl.version()).toBe(version);
    expect(shadow.table_).toMatchObject({ version, fragments: 4, turnstileCommits: 0 });

    expect((await turnstile('mode', name, 'active')).code).toBe(0);
    await expect.poll(async () => (await report()).table_.fragments, { timeout: 60_000, interval: 2_000 }).toBe(1);
    const active = await report();
    expect(active.mode).toBe('active');
    expect(active.turnstile.perKind.optimize.carriedOut).toBeGreaterThanOrEqual(1);
    expect(active.table_.turnstileCommits).toBeGreaterThanOrEqual(1);
    expect(active.table_.rows).toBe(80);
    // The fall from 4 fragments to 1 was Turnstile's own compaction.
    expect(active.table_.outsideCompactions).toBe(0);
    expect(await tbl.countRows()).toBe(80);
    // Above the suite's 120 s: its two waits may take 60 s each (20 and 73 s in all in
    // the last two CI runs).
  }, 240_000);
});
