import fs from 'node:fs';
import type * as lancedb from '@lancedb/lancedb';
import { KEY, VALUE_DIM, payload, type WriterLogLine, type WriterModel } from './rows';

// Checks a table written by the contention bench's writers against their models: every
// key exactly once, holding the writer and seq of its last committed write (and the
// payload of that write), and no row that no model accounts for.

export interface VerifyResult {
  rows: number;
  /** Keys that occur more than once, and the rows beyond the first of each. */
  duplicateKeys: number;
  duplicateRows: number;
  /** Model keys not in the table. */
  missing: number;
  /** Rows whose writer, seq or payload is not the last committed write of their key. */
  wrong: number;
  /** Rows of no model (neither an initial row nor a writer's key). */
  extra: number;
  /** Keys of a writer's pending batch (failed when it stopped): either state is accepted. */
  pendingKeys: number;
  /** Model keys checked (initial rows + every writer's keys). */
  expected: number;
  ok: boolean;
  /** Up to 5 examples of what was wrong. */
  examples: string[];
}

/** The model in a writer's log (its last line, the summary), or null when the writer did not finish. */
export function readWriterModel(logFile: string): WriterModel | null {
  const lines = fs.readFileSync(logFile, 'utf8').trimEnd().split('\n');
  const last = lines.length ? (JSON.parse(lines[lines.length - 1]!) as WriterLogLine) : null;
  return last?.type === 'summary' ? last.model : null;
}

/**
 * Reads the whole table (key, writer, seq and payload) and compares it with the models.
 * `initialRows`: keys 0..initialRows-1 were loaded with writer 0 and seq 0 and no writer
 * touches them.
 */
export async function verifyTable(tbl: lancedb.Table, models: readonly WriterModel[], initialRows: number): Promise<VerifyResult> {
  const expect = new Map<number, { writer: number; seq: number; alt?: number }>();
  for (let k = 0; k < initialRows; k++) expect.set(k, { writer: 0, seq: 0 });
  let pendingKeys = 0;
  for (const m of models) {
    m.seqs.forEach((seq, i) => expect.set(m.keyBase + i, { writer: m.writer, seq }));
    for (const k of m.pending?.keys ?? []) {
      // -1: the key may also be absent (a new key of the batch that never committed).
      const prev = expect.get(k);
      expect.set(k, { writer: m.writer, seq: prev?.seq ?? -1, alt: m.pending!.seq });
      pendingKeys++;
    }
  }

  const seen = new Map<number, number>();
  const examples: string[] = [];
  const note = (s: string) => examples.length < 5 && examples.push(s);
  let rows = 0;
  let wrong = 0;
  let extra = 0;
  const stream = await tbl.query().select([KEY, 'writer', 'wseq', 'value']).toArrow();
  for (const batch of stream.batches) {
    const ids = batch.getChild(KEY)!;
    const writers = batch.getChild('writer')!;
    const seqs = batch.getChild('wseq')!;
    const values = batch.getChild('value')!;
    for (let i = 0; i < batch.numRows; i++) {
      rows++;
      const k = Number(ids.get(i));
      seen.set(k, (seen.get(k) ?? 0) + 1);
      const e = expect.get(k);
      if (!e) {
        extra++;
        note(`key ${k} is in no model`);
        continue;
      }
      const w = Number(writers.get(i));
      const s = Number(seqs.get(i));
      const okSeq = s === e.seq || (e.alt !== undefined && s === e.alt);
      const v = values.get(i) as { get(j: number): number } | null;
      const okValue = v !== null && [0, VALUE_DIM - 1].every((j) => v.get(j) === payload(k, s, j));
      if (w !== e.writer || !okSeq || !okValue) {
        wrong++;
        note(`key ${k}: writer ${w} seq ${s}${okValue ? '' : ' (payload not of that write)'}, expected writer ${e.writer} seq ${e.seq}${e.alt !== undefined ? ` or ${e.alt}` : ''}`);
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
  for (const [k, e] of expect) {
    // A pending new key may be absent.
    if (!seen.has(k) && !(e.seq === -1 && e.alt !== undefined)) {
      missing++;
      note(`key ${k} (writer ${e.writer} seq ${e.seq}) is missing`);
    }
  }
  return { rows, duplicateKeys, duplicateRows, missing, wrong, extra, pendingKeys, expected: expect.size, ok: duplicateKeys + missing + wrong + extra === 0, examples };
}
