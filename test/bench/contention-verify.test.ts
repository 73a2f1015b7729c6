import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as lancedb from '@lancedb/lancedb';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { KEY, KEY_STRIDE, makeBatch, type WriterModel } from '../../bench/contention/rows';
import { verifyTable } from '../../bench/contention/verify';
import { TableWatch } from '../../bench/contention/table-watch';

// The contention bench's judge and its file accounting, against a real Lance table: a
// verify that passed a broken table, or a transaction parser that misread Lance's
// files, would make every number of the bench wrong without failing it.

let dir: string;
let tbl: lancedb.Table;
const W1 = KEY_STRIDE;
const upsert = (keys: number[], writer: number, seq: number) => tbl.mergeInsert(KEY).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(makeBatch(keys, writer, seq));

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'contention-verify-'));
  tbl = await (await lancedb.connect(dir, { readConsistencyInterval: 0 })).createTable('t', makeBatch([0, 1, 2, 3], 0, 0));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

test('verify: the table equals the models; pending keys may hold either state', async () => {
  const watch = new TableWatch(path.join(dir, 't.lance'));
  await watch.baseline();
  await upsert([W1, W1 + 1, W1 + 2], 1, 1);
  await upsert([W1 + 1, W1 + 3], 1, 2);
  await watch.scan();
  const model: WriterModel = { writer: 1, keyBase: W1, seqs: [1, 2, 1, 2], pending: null };
  expect(await verifyTable(tbl, [model], 4)).toMatchObject({ ok: true, rows: 8, expected: 8, duplicateKeys: 0, missing: 0, wrong: 0, extra: 0 });

  // A batch that never committed: its new key may be absent, its old key at either seq.
  const pending: WriterModel = { ...model, pending: { seq: 3, keys: [W1, W1 + 4] } };
  expect(await verifyTable(tbl, [pending], 4)).toMatchObject({ ok: true, pendingKeys: 2 });

  // Two Update commits, each adding one data file with its rows.
  const acc = watch.account();
  expect(acc.byOp.Update).toMatchObject({ commits: 2, files: 2, rows: 5 });
  expect(acc.byOp.Update!.bytes).toBeGreaterThan(0);
  expect(acc).toMatchObject({ createdFiles: 2, orphanFiles: 0, unread: 0 });
  expect(acc.createdBytes).toBe(acc.byOp.Update!.bytes);

  await tbl.optimize();
  await watch.scan();
  expect(watch.account().byOp.Rewrite?.commits).toBe(1);
});

test('verify: duplicates, stale rows, missing and unaccounted keys are each reported', async () => {
  const model: WriterModel = { writer: 1, keyBase: W1, seqs: [1, 2, 1, 2], pending: null };
  // Stale: the model expects a later seq than the table holds.
  expect(await verifyTable(tbl, [{ ...model, seqs: [1, 2, 1, 5] }], 4)).toMatchObject({ ok: false, wrong: 1 });
  // Missing: a key the model has and the table does not.
  expect(await verifyTable(tbl, [{ ...model, seqs: [1, 2, 1, 2, 1] }], 4)).toMatchObject({ ok: false, missing: 1 });
  // Duplicate and unaccounted rows, as a plain add makes them.
  await tbl.add(makeBatch([W1 + 2], 1, 1));
  await tbl.add(makeBatch([7 * KEY_STRIDE], 7, 1));
  const r = await verifyTable(tbl, [model], 4);
  expect(r).toMatchObject({ ok: false, duplicateKeys: 1, duplicateRows: 1, extra: 1, wrong: 0, missing: 0 });
  expect(r.examples.join('\n')).toContain(`key ${W1 + 2} occurs 2 times`);
});
