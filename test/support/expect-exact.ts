import { isDeepStrictEqual } from 'node:util';
import type { Client } from '@temporalio/client';
import { expect } from 'vitest';
import { MergeWaiter } from '../../src/client/merge-waiter';
import { readTableRows } from './lance-read';
import type { Load } from './load';

// The one exact-content check of the tests: the Lance table, read as any LanceDB client
// reads it, equals a "newest seq wins" model row for row.

/** Exact row count, and no row different from the model (the first few differences are shown). */
export async function expectRowsExactly(dataRoot: string, table: string, model: Map<string, Record<string, unknown>>): Promise<void> {
  const { count, rows } = await readTableRows(dataRoot, table);
  expect(count).toBe(model.size);
  const different = [...model].filter(([k, want]) => !isDeepStrictEqual(rows.get(k), want)).map(([key, want]) => ({ key, want, got: rows.get(key) ?? null }));
  expect(different.slice(0, 5), `${different.length} of ${model.size} rows differ`).toEqual([]);
}

/** Waits until every shard is merged through what the load sealed, then checks the table exactly. */
export async function expectMergedExactly(h: { client: Client; dataRoot: string }, table: string, load: Load, shards: string[]): Promise<void> {
  const waiter = new MergeWaiter(h.client);
  const merged = await Promise.all(shards.map((s) => waiter.wait(table, s, load.sealedThrough(s))));
  expect(merged.map((r) => r.mergedThroughSeq)).toEqual(shards.map((s) => load.sealedThrough(s)));
  await expectRowsExactly(h.dataRoot, table, load.model());
}
