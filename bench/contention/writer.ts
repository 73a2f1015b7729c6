// One outside writer of the contention bench, as its own process:
//
//   node --import tsx bench/contention/writer.ts --uri DIR/t.lance --writer 1 --secs 60 --log FILE
//        [--batch 200] [--update-share 0.2] [--rate 0] [--seed 1] [--via lance|turnstile --table NAME]
//
// It connects, prints "ready", waits for a line "go" on stdin, then for --secs writes
// batches of --batch rows: new keys of its own plus --update-share of keys it already
// wrote, drawn at random. --via lance (default) commits each batch itself with
// mergeInsert(id).whenMatchedUpdateAll().whenNotMatchedInsertAll(), as a user's writer
// does; --via turnstile seals each batch through TableWriter (routed to the shards)
// (TEMPORAL_ADDRESS, TURNSTILE_DATA, TURNSTILE_TASK_QUEUE from the environment) and
// Turnstile's workflow merges it. A batch that fails is retried until it commits
// (each failed attempt is logged and counted). --rate R offers at most R batches a
// second (a writer that fell behind does not catch up in a burst); 0, the default,
// starts the next batch as soon as the last one committed. One JSON line per committed batch and
// per failed attempt goes to --log, then a summary with the writer's model: the seq
// each of its keys was last committed with. SIGTERM ends the run after the current batch.

import fs from 'node:fs';
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import type * as lancedb from '@lancedb/lancedb';
import { KEY, KEY_STRIDE, openOutsideTable, type WriterModel } from '../../test/support/outside-table';
import { makeBatch, pct, rng, writtenBytes, type WriterLogLine } from './rows';

const { values: opt } = parseArgs({
  options: {
    uri: { type: 'string' },
    writer: { type: 'string' },
    secs: { type: 'string' },
    log: { type: 'string' },
    batch: { type: 'string', default: '200' },
    'update-share': { type: 'string', default: '0.2' },
    rate: { type: 'string', default: '0' },
    seed: { type: 'string', default: '1' },
    via: { type: 'string', default: 'lance' },
    table: { type: 'string' },
  },
});

const need = (name: keyof typeof opt): string => {
  const v = opt[name];
  if (typeof v !== 'string' || v === '') throw new Error(`--${name} is required`);
  return v;
};
const number = (name: keyof typeof opt, min: number, max = Infinity): number => {
  const n = Number(need(name));
  if (!Number.isFinite(n) || n < min || n > max) throw new Error(`--${name}: ${JSON.stringify(opt[name])} must be a number in [${min}, ${max}]`);
  return n;
};

const WRITER = Math.floor(number('writer', 1, 1_000_000));
const SECS = number('secs', 0);
const BATCH = Math.floor(number('batch', 1));
const UPDATE_SHARE = number('update-share', 0, 1);
const RATE = number('rate', 0);
const SEED = Math.floor(number('seed', 0));
const VIA = need('via');
if (VIA !== 'lance' && VIA !== 'turnstile') throw new Error(`--via: ${JSON.stringify(VIA)} is not valid; accepted: lance, turnstile`);
const LOG = need('log');
/** After the run ends a batch that keeps failing is retried this much longer, then left pending. */
const FINISH_GRACE_MS = 60_000;
const KEY_BASE = WRITER * KEY_STRIDE;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const firstLine = (e: unknown): string => (e instanceof Error ? e.message : String(e)).split('\n')[0]!.slice(0, 500);

/** Commits one batch; what lancedb (or the seal) reports. */
type Commit = (keys: number[], seq: number) => Promise<{ inserted: number; updated: number; attempts: number }>;

async function lanceCommitter(): Promise<{ commit: Commit; close(): Promise<void> }> {
  const tbl: lancedb.Table = await openOutsideTable(need('uri'));
  return {
    commit: async (keys, seq) => {
      const r = await tbl.mergeInsert(KEY).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(makeBatch(keys, WRITER, seq));
      return { inserted: r.numInsertedRows, updated: r.numUpdatedRows, attempts: r.numAttempts };
    },
    close: () => Promise.resolve(tbl.close()),
  };
}

async function turnstileCommitter(lastSeqs: Record<string, number>): Promise<{ commit: Commit; close(): Promise<void> }> {
  // Loaded only here: a plain Lance writer does not pay for the Temporal client.
  const { connectClient } = await import('../../src/client/connect');
  const { TableClient } = await import('../../src/client/table-client');
  const { TableWriter } = await import('../../src/client/table-writer');
  const root = process.env.TURNSTILE_DATA;
  const taskQueue = process.env.TURNSTILE_TASK_QUEUE;
  if (!root || !taskQueue || !process.env.TEMPORAL_ADDRESS) throw new Error('--via turnstile needs TEMPORAL_ADDRESS, TURNSTILE_DATA and TURNSTILE_TASK_QUEUE');
  const client = await connectClient({ address: process.env.TEMPORAL_ADDRESS, namespace: process.env.TEMPORAL_NAMESPACE ?? 'default' });
  const writer = await TableWriter.open(new TableClient(client, taskQueue), root, need('table'));
  await writer.refreshPressure();
  return {
    commit: async (keys, seq) => {
      // Each row goes to the shard owning its key, one generation per shard: a key is
      // always sealed into the same shard, so its later writes get higher seqs there.
      for (const r of await writer.writeRouted(makeBatch(keys, WRITER, seq))) lastSeqs[r.shard] = Math.max(lastSeqs[r.shard] ?? 0, r.seq);
      // A seal is not a merge: what it inserts or updates is decided when it is merged.
      return { inserted: 0, updated: 0, attempts: 1 };
    },
    close: async () => {
      const { signalError } = await writer.close(30_000);
      if (signalError) console.error(`writer ${WRITER}: last demand signal failed: ${signalError}`);
      await client.connection.close();
    },
  };
}

async function main(): Promise<void> {
  const out = fs.openSync(LOG, 'w');
  const log = (line: WriterLogLine) => fs.writeSync(out, JSON.stringify(line) + '\n');
  /** Turnstile only: the highest seq this writer sealed per shard, to wait for their merges. */
  const lastSeqs: Record<string, number> = {};
  const committer = VIA === 'lance' ? await lanceCommitter() : await turnstileCommitter(lastSeqs);
  let stopping = false;
  process.on('SIGTERM', () => (stopping = true));
  process.on('SIGINT', () => (stopping = true));

  // Ready; the bench starts every writer (and the maintenance) at the same moment.
  process.stdout.write('ready\n');
  await new Promise<void>((resolve) => {
    const rl = readline.createInterface({ input: process.stdin });
    rl.on('line', (l) => {
      if (l.trim() === 'go') {
        rl.close();
        resolve();
      }
    });
    rl.on('close', resolve);
  });

  const random = rng(SEED * 7919 + WRITER);
  const model: WriterModel = { writer: WRITER, keyBase: KEY_BASE, seqs: [], pending: null };
  const startedAt = Date.now();
  const endAt = startedAt + SECS * 1000;
  const batchMs: number[] = [];
  let commits = 0;
  let failures = 0;
  let rows = 0;
  let inserted = 0;
  let updated = 0;
  let conflictRetries = 0;

  let nextAt = startedAt;
  for (let seq = 1; !stopping && Date.now() < endAt; seq++) {
    if (RATE > 0) {
      await sleep(nextAt - Date.now());
      if (stopping || Date.now() >= endAt) break;
      nextAt = Math.max(nextAt, Date.now()) + 1000 / RATE;
    }
    // Updates: distinct keys this writer committed before; the rest are new keys.
    const written = model.seqs.length;
    const nUpdates = Math.min(written, Math.round(BATCH * UPDATE_SHARE));
    const picked = new Set<number>();
    while (picked.size < nUpdates) picked.add(Math.floor(random() * written));
    const keys = [...picked].map((i) => KEY_BASE + i);
    for (let i = 0; i < BATCH - nUpdates; i++) keys.push(KEY_BASE + written + i);

    const first = performance.now();
    for (let attempt = 1; ; attempt++) {
      const t0 = performance.now();
      try {
        const r = await committer.commit(keys, seq);
        const now = performance.now();
        log({ type: 'commit', t: Date.now(), ms: now - t0, batchMs: now - first, seq, inserted: r.inserted, updated: r.updated, attempts: r.attempts });
        batchMs.push(now - first);
        commits++;
        rows += keys.length;
        inserted += r.inserted;
        updated += r.updated;
        conflictRetries += Math.max(0, r.attempts - 1);
        for (const k of keys) model.seqs[k - KEY_BASE] = seq;
        break;
      } catch (e) {
        failures++;
        log({ type: 'failure', t: Date.now(), ms: performance.now() - t0, seq, error: firstLine(e) });
        if (Date.now() > endAt + FINISH_GRACE_MS) {
          model.pending = { seq, keys };
          break;
        }
        // Jittered backoff, so retrying writers do not meet again at once.
        await sleep(Math.min(5000, 100 * 2 ** Math.min(attempt, 6)) * (0.5 + random()));
      }
    }
    if (model.pending) break;
  }
  const endedAt = Date.now();
  await committer.close();
  log({
    type: 'summary',
    writer: WRITER,
    via: VIA as 'lance' | 'turnstile',
    startedAt,
    endedAt,
    commits,
    failures,
    rows,
    inserted,
    updated,
    conflictRetries,
    p50: pct(batchMs, 50),
    p99: pct(batchMs, 99),
    wchar: writtenBytes('self'),
    ...(VIA === 'turnstile' ? { lastSeqs } : {}),
    model,
  });
  fs.closeSync(out);
  console.log(`writer ${WRITER}: ${commits} commits, ${failures} failures, ${rows} rows in ${((endedAt - startedAt) / 1000).toFixed(1)} s`);
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(`writer ${WRITER}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    process.exit(1);
  },
);
