// The maintenance users run today beside their writers, as its own process: every
// --every seconds one optimize({ cleanupOlderThan: now - --retention s }) of the table
// (compaction, index folding, pruning of old versions), whether or not a writer is
// committing at that moment.
//
//   node --import tsx bench/contention/optimizer.ts --uri DIR/t.lance --log FILE [--every 60] [--retention 60]
//
// Prints "ready", waits for "go" on stdin, then runs until SIGTERM (which it obeys after
// the optimize in progress). One JSON line per run to --log: its duration and either
// lancedb's compaction and prune stats or the error.

import fs from 'node:fs';
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import { openOutsideTable } from '../../test/support/outside-table';
import { writtenBytes } from './rows';

const { values: opt } = parseArgs({
  options: { uri: { type: 'string' }, log: { type: 'string' }, every: { type: 'string', default: '60' }, retention: { type: 'string', default: '60' } },
});
if (!opt.uri || !opt.log) throw new Error('--uri and --log are required');
const EVERY_MS = Number(opt.every) * 1000;
const RETENTION_MS = Number(opt.retention) * 1000;
if (!(EVERY_MS > 0) || !(RETENTION_MS >= 0)) throw new Error(`--every ${opt.every} must be > 0 and --retention ${opt.retention} >= 0 (seconds)`);

export type OptimizeLogLine =
  | {
      type: 'run';
      t: number;
      ms: number;
      ok: boolean;
      error?: string;
      compaction?: { fragmentsRemoved: number; fragmentsAdded: number; filesRemoved: number; filesAdded: number };
      prune?: { bytesRemoved: number; oldVersionsRemoved: number };
    }
  /** The last line: what the process wrote in all (see writtenBytes). */
  | { type: 'end'; wchar: number | null };

async function main(): Promise<void> {
  const tbl = await openOutsideTable(opt.uri!);
  const out = fs.openSync(opt.log!, 'w');
  let stopping = false;
  let wake: (() => void) | null = null;
  process.on('SIGTERM', () => {
    stopping = true;
    wake?.();
  });
  process.stdout.write('ready\n');
  await new Promise<void>((resolve) => {
    const rl = readline.createInterface({ input: process.stdin });
    rl.on('line', (l) => l.trim() === 'go' && (rl.close(), resolve()));
    rl.on('close', resolve);
  });
  const start = Date.now();
  for (let n = 1; !stopping; n++) {
    // On a fixed schedule from the start, as a cron job runs.
    const wait = start + n * EVERY_MS - Date.now();
    if (wait > 0) await new Promise<void>((r) => ((wake = r), setTimeout(r, wait)));
    if (stopping) break;
    const t0 = performance.now();
    let line: OptimizeLogLine;
    try {
      const s = await tbl.optimize({ cleanupOlderThan: new Date(Date.now() - RETENTION_MS) });
      line = { type: 'run', t: Date.now(), ms: performance.now() - t0, ok: true, compaction: s.compaction, prune: s.prune };
    } catch (e) {
      line = { type: 'run', t: Date.now(), ms: performance.now() - t0, ok: false, error: (e instanceof Error ? e.message : String(e)).split('\n')[0]!.slice(0, 500) };
    }
    fs.writeSync(out, JSON.stringify(line) + '\n');
  }
  tbl.close();
  fs.writeSync(out, JSON.stringify({ type: 'end', wchar: writtenBytes('self') } satisfies OptimizeLogLine) + '\n');
  fs.closeSync(out);
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(`optimizer: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    process.exit(1);
  },
);
