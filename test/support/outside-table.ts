import fs from 'node:fs';
import path from 'node:path';
import * as lancedb from '@lancedb/lancedb';
import { arrow, type ArrowTable } from '../../src/storage/arrow';
import { lanceConnectOptions } from '../../src/storage/lance-table';

// A Lance table as an application writes it, outside Turnstile: key `id` (int64), the
// writer and batch that last wrote each row, and a payload that is a function of both,
// so a row read back tells which write it holds. Shared by the outside writer process
// (fixtures/outside-writer.ts) and the tests that check the table against the writers.

export const KEY = 'id';
/** The initial rows have keys 0..N-1; writer w (from 1) writes keys w * KEY_STRIDE + i, so writers never share a key. */
export const KEY_STRIDE = 1_000_000_000;

/** ~100 bytes, a function of the write. */
export const payloadOf = (key: number, seq: number): string => `${key}:${seq}:`.padEnd(100, String.fromCharCode(97 + ((key + seq) % 26)));

/** One mergeInsert batch: every row carries the writer and its batch number (seq). */
export function makeBatch(keys: readonly number[], writer: number, seq: number): ArrowTable {
  return new arrow.Table({
    [KEY]: arrow.makeVector(BigInt64Array.from(keys, (k) => BigInt(k))),
    writer: arrow.makeVector(new Int32Array(keys.length).fill(writer)),
    wseq: arrow.makeVector(new BigInt64Array(keys.length).fill(BigInt(seq))),
    payload: arrow.vectorFromArray(keys.map((k) => payloadOf(k, seq)), new arrow.Utf8()),
  });
}

/** `<db>/<name>.lance`, local or s3://, as lancedb.connect(db).openTable(name) takes it. */
export function splitTableUri(uri: string): { db: string; name: string } {
  const trimmed = uri.replace(/\/+$/, '');
  const base = path.posix.basename(trimmed);
  if (!base.endsWith('.lance')) throw new Error(`${JSON.stringify(uri)} is not a Lance table directory (NAME.lance)`);
  return { db: trimmed.slice(0, trimmed.length - base.length - 1), name: base.slice(0, -'.lance'.length) };
}

/** A handle that sees every commit at once (readConsistencyInterval 0). */
export async function openOutsideTable(uri: string): Promise<lancedb.Table> {
  const { db, name } = splitTableUri(uri);
  return (await lancedb.connect(db, { readConsistencyInterval: 0, ...lanceConnectOptions(db) })).openTable(name);
}

/** The application's table: `rows` initial rows (writer 0, seq 0) and a BTREE on the key. */
export async function createOutsideTable(uri: string, rows: number): Promise<void> {
  const { db, name } = splitTableUri(uri);
  const tbl = await (await lancedb.connect(db, lanceConnectOptions(db))).createTable(name, makeBatch(Array.from({ length: rows }, (_, i) => i), 0, 0));
  await tbl.createIndex(KEY, { config: lancedb.Index.btree() });
  tbl.close();
}

/**
 * What a writer committed: key keyBase + i last with seq seqs[i]. `pending`: the batch
 * it was retrying when it stopped; its keys may hold either state (new ones may be absent).
 */
export interface WriterModel {
  writer: number;
  keyBase: number;
  seqs: number[];
  pending: { seq: number; keys: number[] } | null;
}

/**
 * A line of a writer's log (appended as it goes, so a writer killed in a batch leaves a
 * log that still tells what it committed): a batch begun, committed, or an attempt failed.
 */
export type WriterLogLine =
  | { type: 'begin'; t: number; seq: number; keys: number[] }
  | { type: 'commit'; t: number; seq: number; attempts: number; lanceRetries: number }
  | { type: 'failure'; t: number; seq: number; attempt: number; ms: number; error: string };

/** What a writer's log says: its model, its counts, and the batch it was in when the log ends. */
export interface WriterRun {
  model: WriterModel;
  commits: number;
  /** Attempts that threw (each retried). */
  failures: number;
  /** Attempts lancedb retried inside one mergeInsert (numAttempts - 1), summed. */
  lanceRetries: number;
  batchMs: number[];
  /** The batch begun and neither committed nor given up when the log ends. */
  inFlight: { seq: number; sinceMs: number } | null;
  errors: string[];
}

export function readWriterLog(file: string, writer: number): WriterRun {
  const model: WriterModel = { writer, keyBase: writer * KEY_STRIDE, seqs: [], pending: null };
  const run: WriterRun = { model, commits: 0, failures: 0, lanceRetries: 0, batchMs: [], inFlight: null, errors: [] };
  let begun: Extract<WriterLogLine, { type: 'begin' }> | null = null;
  for (const text of fs.readFileSync(file, 'utf8').split('\n')) {
    let line: WriterLogLine;
    try {
      line = JSON.parse(text) as WriterLogLine;
    } catch {
      continue; // empty, or cut short by a kill
    }
    if (line.type === 'begin') begun = line;
    else if (line.type === 'failure') {
      run.failures++;
      run.errors.push(`seq ${line.seq} attempt ${line.attempt} after ${(line.ms / 1000).toFixed(1)} s: ${line.error}`);
    } else if (begun && line.seq === begun.seq) {
      for (const k of begun.keys) model.seqs[k - model.keyBase] = begun.seq;
      run.commits++;
      run.lanceRetries += line.lanceRetries;
      run.batchMs.push(line.t - begun.t);
      begun = null;
    }
  }
  if (begun) {
    model.pending = { seq: begun.seq, keys: begun.keys };
    run.inFlight = { seq: begun.seq, sinceMs: begun.t };
  }
  return run;
}

export interface Verified {
  rows: number;
  expected: number;
  duplicateKeys: number;
  /** Model keys not in the table. */
  missing: number;
  /** Rows that hold another write than their key's last committed one. */
  wrong: number;
  /** Rows of keys no model has. */
  extra: number;
  /** Up to 5 examples of what was wrong. */
  examples: string[];
}

/** Reads the whole table and compares it with the writers' models and the initial rows. */
export async function verifyOutside(tbl: lancedb.Table, models: readonly WriterModel[], initialRows: number): Promise<Verified> {
  const expect = new Map<number, { writer: number; seqs: number[] }>();
  for (let k = 0; k < initialRows; k++) expect.set(k, { writer: 0, seqs: [0] });
  const maybeAbsent = new Set<number>();
  for (const m of models) {
    m.seqs.forEach((seq, i) => expect.set(m.keyBase + i, { writer: m.writer, seqs: [seq] }));
    for (const k of m.pending?.keys ?? []) {
      const prev = expect.get(k);
      if (prev) prev.seqs.push(m.pending!.seq);
      else {
        expect.set(k, { writer: m.writer, seqs: [m.pending!.seq] });
        maybeAbsent.add(k);
      }
    }
  }
  const seen = new Map<number, number>();
  const examples: string[] = [];
  const note = (s: string) => void (examples.length < 5 && examples.push(s));
  let rows = 0;
  let wrong = 0;
  let extra = 0;
  for (const batch of (await tbl.query().select([KEY, 'writer', 'wseq', 'payload']).toArrow()).batches) {
    const [ids, writers, seqs, payloads] = [KEY, 'writer', 'wseq', 'payload'].map((c) => batch.getChild(c)!);
    for (let i = 0; i < batch.numRows; i++) {
      rows++;
      const k = Number(ids!.get(i));
      seen.set(k, (seen.get(k) ?? 0) + 1);
      const e = expect.get(k);
      if (!e) {
        extra++;
        note(`key ${k} is in no model`);
        continue;
      }
      const w = Number(writers!.get(i));
      const s = Number(seqs!.get(i));
      if (w !== e.writer || !e.seqs.includes(s) || payloads!.get(i) !== payloadOf(k, s)) {
        wrong++;
        note(`key ${k}: writer ${w} seq ${s}, expected writer ${e.writer} seq ${e.seqs.join(' or ')}`);
      }
    }
  }
  let duplicateKeys = 0;
  for (const [k, n] of seen) {
    if (n > 1) {
      duplicateKeys++;
      note(`key ${k} occurs ${n} times`);
    }
  }
  let missing = 0;
  for (const k of expect.keys()) {
    if (!seen.has(k) && !maybeAbsent.has(k)) {
      missing++;
      note(`key ${k} is missing`);
    }
  }
  return { rows, expected: expect.size, duplicateKeys, missing, wrong, extra, examples };
}
