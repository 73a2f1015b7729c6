import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type * as lancedb from '@lancedb/lancedb';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createOutsideTable, KEY, KEY_STRIDE, makeBatch, openOutsideTable, readWriterLog, verifyAgainstModels, type WriterModel } from '../support/outside-table';

// The judge of the adopted-table tests (test/support/outside-table.ts) against a real
// Lance table: a verify that passed a table with a lost or doubled write would make
// those tests pass whatever the maintenance did to the writers' rows.

let dir: string;
let tbl: lancedb.Table;
const W1 = KEY_STRIDE;
const upsert = (keys: number[], seq: number) => tbl.mergeInsert(KEY).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(makeBatch(keys, 1, seq));

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outside-verify-'));
  const uri = path.join(dir, 't.lance');
  await createOutsideTable(uri, 4);
  tbl = await openOutsideTable(uri);
  await upsert([W1, W1 + 1, W1 + 2], 1);
  await upsert([W1 + 1, W1 + 3], 2);
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const model: WriterModel = { writer: 1, keyBase: W1, seqs: [1, 2, 1, 2], pending: null };

test('a table that holds exactly the initial rows and each key at its last write passes', async () => {
  expect(await verifyAgainstModels(tbl, [model], 4)).toEqual({ rows: 8, expected: 8, duplicateKeys: 0, duplicateRows: 0, missing: 0, wrong: 0, extra: 0, pendingKeys: 0, ok: true, examples: [] });
  // A batch that was still failing when its writer stopped: an old key at either seq, a new one absent.
  const pending = { ...model, pending: { seq: 3, keys: [W1, W1 + 4] } };
  expect(await verifyAgainstModels(tbl, [pending], 4)).toMatchObject({ ok: true, pendingKeys: 2 });
});

test('a stale row, a missing key, a doubled key and a key of no writer are each reported', async () => {
  expect(await verifyAgainstModels(tbl, [{ ...model, seqs: [1, 2, 1, 5] }], 4)).toMatchObject({ wrong: 1, missing: 0 });
  expect(await verifyAgainstModels(tbl, [{ ...model, seqs: [1, 2, 1, 2, 1] }], 4)).toMatchObject({ missing: 1, wrong: 0 });
  expect(await verifyAgainstModels(tbl, [model], 5)).toMatchObject({ missing: 1 });
  await tbl.add(makeBatch([W1 + 2], 1, 1));
  await tbl.add(makeBatch([7 * KEY_STRIDE], 7, 1));
  const r = await verifyAgainstModels(tbl, [model], 4);
  expect(r).toMatchObject({ ok: false, rows: 10, duplicateKeys: 1, duplicateRows: 1, extra: 1, wrong: 0, missing: 0 });
  expect(r.examples).toEqual(expect.arrayContaining([`key ${7 * KEY_STRIDE} is in no model`, `key ${W1 + 2} occurs 2 times`]));
});

test("a writer's log: committed batches make its model, a batch begun and not committed is pending", () => {
  const file = path.join(dir, 'writer-1.jsonl');
  const lines = [
    { type: 'begin', t: 1000, seq: 1, keys: [W1, W1 + 1] },
    { type: 'failure', t: 1200, seq: 1, attempt: 1, ms: 200, error: 'conflict' },
    { type: 'commit', t: 1500, seq: 1, attempts: 2, lanceRetries: 1 },
    { type: 'begin', t: 2000, seq: 2, keys: [W1 + 1, W1 + 2] },
    { type: 'commit', t: 2100, seq: 2, attempts: 1, lanceRetries: 0 },
    { type: 'begin', t: 3000, seq: 3, keys: [W1, W1 + 3] },
  ];
  // The last line cut short, as a kill in the middle of a write leaves it.
  fs.writeFileSync(file, lines.map((l) => JSON.stringify(l)).join('\n') + '\n{"type":"comm');
  expect(readWriterLog(file, 1)).toEqual({
    model: { writer: 1, keyBase: W1, seqs: [1, 2, 2], pending: { seq: 3, keys: [W1, W1 + 3] } },
    commits: 2,
    failures: 1,
    lanceRetries: 1,
    batchMs: [500, 100],
    inFlight: { seq: 3, sinceMs: 3000 },
    errors: ['seq 1 attempt 1 after 0.2 s: conflict'],
  });
});
