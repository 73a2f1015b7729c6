import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as lancedb from '@lancedb/lancedb';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { makeBatch } from '../../bench/contention/rows';
import { KEY, KEY_STRIDE, type WriterModel } from '../support/outside-table';
import { verifyTable } from '../../bench/contention/verify';
import { TableWatch } from '../../bench/contention/table-watch';

// The contention bench's judge on its own rows (the judge itself is tested in
// test/storage/outside-verify.test.ts) and its file accounting, against a real Lance
// table: a payload check that passed any vector, or a transaction parser that misread
// Lance's files, would make every number of the bench wrong without failing it.

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

test("verify: a row whose vector is not its write's is wrong", async () => {
  const model: WriterModel = { writer: 1, keyBase: W1, seqs: [1, 2, 1, 2], pending: null };
  // Key W1 + 3 rewritten at its seq with the vector of another write.
  const forged = makeBatch([W1 + 3], 1, 9);
  await tbl.mergeInsert(KEY).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(makeBatch([W1 + 3], 1, 2).assign(forged.select(['value'])));
  const r = await verifyTable(tbl, [model], 4);
  expect(r).toMatchObject({ ok: false, wrong: 1, missing: 0, extra: 0, duplicateKeys: 0 });
  expect(r.examples).toEqual([`key ${W1 + 3}: writer 1 seq 2 (payload not of that write), expected writer 1 seq 2`]);
});
