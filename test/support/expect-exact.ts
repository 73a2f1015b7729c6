import type { Client } from '@temporalio/client';
import { expect } from 'vitest';
import { MergeWaiter } from '../../src/client/merge-waiter';
import { readTableRows } from './lance-read';
import type { Load } from './load';

/**
 * Waits until every shard is merged through what the load sealed, then checks the Lance
 * table equals the load's newest-seq-wins model: exact row count, no row different.
 */
export async function expectMergedExactly(h: { client: Client; dataRoot: string }, table: string, load: Load, shards: string[]): Promise<void> {
  const waiter = new MergeWaiter(h.client);
  const merged = await Promise.all(shards.map((s) => waiter.wait(table, s, load.sealedThrough(s))));
  expect(merged.map((r) => r.mergedThroughSeq)).toEqual(shards.map((s) => load.sealedThrough(s)));
  const model = load.model();
  const { count, rows } = await readTableRows(h.dataRoot, table);
  expect(count).toBe(model.size);
  let mismatches = 0;
  for (const [k, want] of model) if (JSON.stringify(rows.get(k)) !== JSON.stringify(want)) mismatches++;
  expect(mismatches).toBe(0);
}
