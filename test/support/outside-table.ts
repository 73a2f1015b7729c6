import fs from 'node:fs';
import * as lancedb from '@lancedb/lancedb';
import { arrow, type ArrowTable } from '../../src/storage/arrow';
import { adoptedLocation } from '../../src/storage/adopted-table';
import { lanceConnectOptions } from '../../src/storage/lance-table';

// A Lance table as an application writes it, outside Turnstile: key `id` (int64), the
// writer and batch that last wrote each row, and a payload that is a function of both,
// so a row read back tells which write it holds. Shared by the outside writer process
// (fixtures/outside-writer.ts), the tests that check the table against the writers, and
// the contention bench (bench/contention/), whose rows carry a vector payload instead.

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

/** A handle that sees every commit at once (readConsistencyInterval 0). */
export async function openOutsideTable(uri: string): Promise<lancedb.Table> {
  const { db, name } = adoptedLocation(uri);
  return (await lancedb.connect(db, { readConsistencyInterval: 0, ...lanceConnectOptions(db) })).openTable(name);
}

/** The application's table: `rows` initial rows (writer 0, seq 0) and a BTREE on the key. */
export async function createOutsideTable(uri: string, rows: number): Promise<void> {
  const { db, name } = adoptedLocation(uri);
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
  /** Model keys checked (initial rows + every writer's keys). */
  expected: number;
  /** Keys that occur more than once, and the rows beyond the first of each. */
  duplicateKeys: number;
  duplicateRows: number;
  /** Model keys not in the table. */
  missing: number;
  /** Rows whose writer, seq or payload is not the last committed write of their key. */
  wrong: number;
  /** Rows of keys no model has. */
  extra: number;
  /** Keys of a writer's pending batch (failed or cut off when it stopped): either state is accepted. */
  pendingKeys: number;
  ok: boolean;
  /** Up to 5 examples of what was wrong. */
  examples: string[];
}

/** How a row shape carries its write: the payload column and whether a row's payload is that of (key, seq). */
export interface PayloadCheck {
  column: string;
  matches(payload: unknown, key: number, seq: number): boolean;
}

/** This module's rows: a ~100-character string. */
export const STRING_PAYLOAD: PayloadCheck = { column: 'payload', matches: (p, key, seq) => p === payloadOf(key, seq) };

/**
 * Reads the whole table (key, writer, seq and payload) and compares it with the writers'
 * models: every key exactly once, holding the writer, seq and payload of its last
 * committed write, and no row that no model accounts for. Keys 0..initialRows-1 were
 * loaded with writer 0 and seq 0 and no writer touches them.
 */
export async function verifyAgainstModels(tbl: lancedb.Table, models: readonly WriterModel[], initialRows: number, payload: PayloadCheck = STRING_PAYLOAD): Promise<Verified> {
  const expect = new Map<number, { writer: number; seqs: number[] }>();
  for (let k = 0; k < initialRows; k++) expect.set(k, { writer: 0, seqs: [0] });
  const maybeAbsent = new Set<number>();
  let pendingKeys = 0;
  for (const m of models) {
    m.seqs.forEach((seq, i) => expect.set(m.keyBase + i, { writer: m.writer, seqs: [seq] }));
    for (const k of m.pending?.keys ?? []) {
      pendingKeys++;
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
  for (const batch of (await tbl.query().select([KEY, 'writer', 'wseq', payload.column]).toArrow()).batches) {
    const [ids, writers, seqs, payloads] = [KEY, 'writer', 'wseq', payload.column].map((c) => batch.getChild(c)!);
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
      const okPayload = payload.matches(payloads!.get(i), k, s);
      if (w !== e.writer || !e.seqs.includes(s) || !okPayload) {
        wrong++;
        note(`key ${k}: writer ${w} seq ${s}${okPayload ? '' : ' (payload not of that write)'}, expected writer ${e.writer} seq ${e.seqs.join(' or ')}`);
      }
    }
  }
  let duplicateKeys = 0;
  let duplicateRows = 0;
  for (const [k, n] of seen) {
    if (n > 1) {
      duplicateKeys++;
      duplicateRows += n - 1;
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
  return { rows, expected: expect.size, duplicateKeys, duplicateRows, missing, wrong, extra, pendingKeys, ok: duplicateKeys + missing + wrong + extra === 0, examples };
}
