import { afterEach, expect, it } from 'vitest';
import { PreparedCache } from '../../activities/prepared-cache';
import { readIpcFile } from '../../src/storage/arrow';
import { generationFile, tableLayout } from '../../src/storage/layout';
import { makeFixture, prepareAndCommit, sealMany, tableRows, type Fixture } from './helpers';

// A file of its own: the carried memory pool (src/storage/scratch.ts) is the process's,
// and here nothing else has put memory in it.

let f: Fixture | undefined;
afterEach(() => f?.cleanup());

it("a committed batch's memory carries the next batch prepared on the worker, and every round merges exactly", async () => {
  const kept: Buffer[] = [];
  class Recording extends PreparedCache {
    override put(path: string, ipc: Buffer): void {
      kept.push(ipc);
      super.put(path, ipc);
    }
  }
  f = await makeFixture({ shards: 1, deps: { preparedCache: new Recording(256 * 2 ** 20) } });
  const rounds = 4;
  for (let round = 0; round < rounds; round++) {
    // Three generations of one key range: a batch of their newest rows, encoded (not a generation as is).
    await sealMany(f, 's0', 3, 20_000, [0, 29_999], 1000 + 3 * round);
    await prepareAndCommit(f, 's0', 3 * round + 1, 3 * round + 3);
  }
  expect(kept).toHaveLength(rounds);
  // Given back after each commit and taken again: one piece of memory for every round.
  expect(new Set(kept.map((b) => b.buffer)).size).toBe(1);

  // The table is each key's newest row over all the generations, so no batch was read
  // after its memory went to the next one.
  const newest = new Map<string, { id: string; value: string; n: number; seq: string }>();
  const layout = tableLayout(f.root, f.table);
  for (let seq = 1; seq <= 3 * rounds; seq++) {
    for (const r of (await readIpcFile(generationFile(layout, 's0', seq))).toArray() as { id: unknown; value: unknown; n: unknown }[]) {
      newest.set(String(r.id), { id: String(r.id), value: String(r.value), n: Number(r.n), seq: String(seq) });
    }
  }
  expect(await tableRows(f)).toEqual([...newest.values()].sort((a, b) => Number(a.id) - Number(b.id)));
});
