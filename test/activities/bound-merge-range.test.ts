import fs from 'node:fs';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { boundMergeRange } from '../../activities/memory-reservations';
import type { ActivityDeps } from '../../activities/deps';
import { generationFile, tableLayout } from '../../src/storage/layout';
import { sealGeneration } from '../../src/storage/generation-store';
import { maxBatchBytes } from '../../src/worker/reservation-sizes';
import { makeFixture, type Fixture } from './helpers';

// boundMergeRange asks for the generations' sizes several at a time; the range it returns
// must still be the longest prefix whose bytes fit a batch, as summed one by one.

const MiB = 2 ** 20;
const GENERATIONS = 40;
let f: Fixture;
let sizes: number[];

beforeAll(async () => {
  f = await makeFixture({ shards: 1 });
  const shard = f.shards[0]!;
  for (let g = 0; g < GENERATIONS; g++) {
    // Sizes that vary, so a cut depends on every one of them.
    const rows = Array.from({ length: 20 + ((g * 37) % 90) }, (_, i) => ({ id: g * 1000 + i, value: 'x'.repeat(200 + ((g * 13) % 300)) }));
    await sealGeneration(f.root, f.table, shard, rows);
  }
  const l = tableLayout(f.root, f.table);
  sizes = Array.from({ length: GENERATIONS }, (_, i) => fs.statSync(generationFile(l, shard, i + 1)).size);
});
afterAll(() => f?.cleanup());

/** A budget whose batch limit is about `target` bytes. */
function budgetFor(target: number): number {
  let b = 64 * MiB;
  while (maxBatchBytes(b) < target) b += MiB / 8;
  return b;
}

/** The longest prefix of fromSeq..toSeq within `limit` (at least one generation), summed one by one. */
function expected(fromSeq: number, toSeq: number, limit: number): { toSeq: number; bytes: number } {
  let bytes = 0;
  let to = fromSeq;
  for (let seq = fromSeq; seq <= toSeq; seq++) {
    const size = sizes[seq - 1]!;
    if (seq > fromSeq && bytes + size > limit) break;
    bytes += size;
    to = seq;
  }
  return { toSeq: to, bytes };
}

test('the batch is the longest prefix that fits, for limits that cut it early, late, or not at all', async () => {
  const total = sizes.reduce((a, b) => a + b, 0);
  const cases: [number, number][] = [
    [1, GENERATIONS],
    [5, 30],
    [17, 17],
    [GENERATIONS - 3, GENERATIONS],
  ];
  for (const target of [sizes[0]! / 2, total / 7, total / 2, total * 2]) {
    const budget = budgetFor(target);
    const limit = maxBatchBytes(budget);
    const deps = { dataRoot: f.root, admission: { fleetBudgets: () => ({ smallest: budget, largest: budget }) } } as unknown as ActivityDeps;
    for (const [fromSeq, toSeq] of cases) {
      const got = await boundMergeRange(deps, { table: f.table, shard: f.shards[0]!, fromSeq, toSeq, key: 'id' });
      expect({ toSeq: got.toSeq, bytes: got.bytes }, `limit ${limit}, ${fromSeq}..${toSeq}`).toEqual(expected(fromSeq, toSeq, limit));
      expect(got.maxBatchBytes).toBe(limit);
    }
  }
});
