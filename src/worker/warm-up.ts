import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { warmUpPreparationHere } from '../../activities/warm-up-preparation';
import { conditionalUpsert, openOrCreateLanceTable } from '../storage/lance-table';
import { tableFromRows, withSeqColumn } from '../storage/records';

// Lance starts lazily: a process's first table creation and first mergeInsert cost
// ~70 ms and ~110 ms of wall time more than later ones (its runtime, thread pools and
// query planner come up on first use; measured in bench/README.md). In a worker that
// first use is a commit, holding some table's write-turn. So a worker makes one tiny
// merge into a scratch table of its own before it polls: ~0.2 s of CPU once per process.
// With `preparationRows`, it also prepares that many made-up rows on this thread first
// (warm-up-preparation.ts).

const ROWS = 64;

/** A preparation of made-up rows here, then one create and two conditional merges of a throwaway table under the OS temp dir; the table's last version. */
export async function warmUpMergePath(opts: { preparationRows?: number } = {}): Promise<number> {
  await warmUpPreparationHere(Math.max(ROWS, opts.preparationRows ?? 0));
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'turnstile-warm-up-'));
  try {
    const batch = (from: number, seq: number) => withSeqColumn(tableFromRows(Array.from({ length: ROWS }, (_, i) => ({ id: from + i, value: `w${seq}` })), 'id'), seq, 'id');
    const first = batch(0, 1);
    const tbl = await openOrCreateLanceTable(dir, 'warm-up', 'id', first.schema);
    try {
      await conditionalUpsert(tbl, 'id', first);
      return (await conditionalUpsert(tbl, 'id', batch(ROWS / 2, 2))).version;
    } finally {
      tbl.close();
    }
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}
