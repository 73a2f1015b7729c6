import fs from 'node:fs';
import type * as lancedb from '@lancedb/lancedb';
import { verifyAgainstModels, type Verified, type WriterModel } from '../../test/support/outside-table';
import { VECTOR_PAYLOAD, type WriterLogLine } from './rows';

// Checks a table written by the contention bench's writers against their models (the
// check the adopted-table tests make, test/support/outside-table.ts), on the bench's rows.

export type VerifyResult = Verified;

/** The model in a writer's log (its last line, the summary), or null when the writer did not finish. */
export function readWriterModel(logFile: string): WriterModel | null {
  const lines = fs.readFileSync(logFile, 'utf8').trimEnd().split('\n');
  const last = lines.length ? (JSON.parse(lines[lines.length - 1]!) as WriterLogLine) : null;
  return last?.type === 'summary' ? last.model : null;
}

/** Reads the whole table and compares it with the models; keys 0..initialRows-1 are the initial load. */
export const verifyTable = (tbl: lancedb.Table, models: readonly WriterModel[], initialRows: number): Promise<Verified> => verifyAgainstModels(tbl, models, initialRows, VECTOR_PAYLOAD);
