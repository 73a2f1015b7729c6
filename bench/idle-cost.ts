// What idle tables cost the Temporal server, before and after the idle-cost rules, side
// by side in one run on one server and one worker (with the store sweep): N tables per
// mode, nobody writes (the "written" tables once, at creation), M minutes; then history
// events and workflow tasks per table-hour, counted from the tables' real histories (see
// idle-cost-measure.ts). "before" is the policy switch for the old behaviour (a fixed
// 60 s scan, optimize/index/gc due every period).
//
//   npx tsx bench/idle-cost.ts [--tables 50] [--minutes 10] [--json]
//
// Starts its own Temporal dev server (SQLite file in a temp dir) unless TEMPORAL_ADDRESS
// is set.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { DevServer } from '../src/server/dev-server';
import { formatReport, measureIdleCost, MODES } from './idle-cost-measure';
import { benchServer, mib, peakRssBytes } from './support';

const { values: opt } = parseArgs({
  options: { tables: { type: 'string', default: '50' }, minutes: { type: 'string', default: '10' }, json: { type: 'boolean', default: false } },
});

function positive(name: string, v: string | undefined, int: boolean): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0 || (int && !Number.isSafeInteger(n))) {
    console.error(`--${name}: ${JSON.stringify(v)} is not a positive ${int ? 'integer' : 'number'}`);
    process.exit(2);
  }
  return n;
}

const TABLES = positive('tables', opt.tables, true);
const MINUTES = positive('minutes', opt.minutes, false);

async function main(): Promise<void> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-bench-idle-'));
  let server: DevServer | undefined;
  try {
    const started = await benchServer(tmp);
    server = started.server;
    const address = started.address;
    console.log(`idle cost: ${TABLES} tables per mode (${MODES.map((m) => m.name).join(', ')}), ${MINUTES} min, ${os.cpus().length} cores, server ${address}${server ? ' (started here)' : ''}`);
    const report = await measureIdleCost({
      address,
      dataRoot: path.join(tmp, 'data'),
      taskQueue: `bench-idle-${process.pid}`,
      tablesPerMode: TABLES,
      seconds: MINUTES * 60,
      log: (line) => console.log(line),
    });
    console.log('');
    console.log(opt.json ? JSON.stringify(report, null, 2) : formatReport(report));
    // The worker runs in this process: its peak is the bench's, tables' generations are a few KiB.
    console.log(`this process (bench and its in-process worker): peak RSS ${mib(peakRssBytes(process.pid))}`);
  } finally {
    await server?.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(`idle-cost: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  process.exitCode = 1;
});
