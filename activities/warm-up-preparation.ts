import { decodeVerifiedIpc, encodeIpcFile, ipcShapeProblem } from '../src/storage/arrow';
import { embeddedChecksumProblem } from '../src/storage/ipc-checksum';
import { tableFromRows, withSeqColumn } from '../src/storage/records';
import { NewestRowPerKey } from './newest-row-per-key';
import { generationProblem } from './validate-generation';

// A fresh process's first preparation runs its hot loops (checksum, decode, key hashing,
// the winners' copy, encode) unoptimised and grows its heap from nothing: a worker's
// first large merge cost about half as much CPU again as later ones (bench/README.md).
// So whatever thread will prepare merges first prepares two made-up
// generations, before the worker polls.

/** Two generations of `rows` made-up rows, the second overlapping half of the first, encoded as sealed (checksum embedded). */
export async function warmUpGenerations(rows: number): Promise<{ seq: number; ipc: Buffer }[]> {
  const generation = (from: number, seq: number) => withSeqColumn(tableFromRows(Array.from({ length: rows }, (_, i) => ({ id: from + i, value: `warm-up ${seq} ${i}`, n: i / 2 })), 'id'), seq, 'id');
  const out: { seq: number; ipc: Buffer }[] = [];
  for (const [from, seq] of [[0, 1], [Math.floor(rows / 2), 2]] as const) out.push({ seq, ipc: await encodeIpcFile(generation(from, seq)) });
  return out;
}

/** The preparation's steps on this thread, as prepare-merge.ts runs them when the worker has no dedup thread; the batch's rows and encoded bytes. */
export async function warmUpPreparationHere(rows: number): Promise<{ rows: number; bytes: number }> {
  const acc = new NewestRowPerKey('id', 2);
  for (const { seq, ipc } of await warmUpGenerations(rows)) {
    const changed = embeddedChecksumProblem(ipc);
    const problem = ipcShapeProblem(ipc) ?? (changed === undefined ? 'no checksum' : changed);
    if (problem !== null) throw new Error(`warm-up: made-up generation ${seq}: ${problem}`);
    const decoded = decodeVerifiedIpc(ipc);
    if ('problem' in decoded) throw new Error(`warm-up: made-up generation ${seq}: ${decoded.problem}`);
    const invalid = generationProblem(decoded.table, 'id', seq, acc.schema);
    if (invalid) throw new Error(`warm-up: ${invalid}`);
    await acc.addYielding(decoded.table);
  }
  const encoded = await acc.encodeYielding((n) => Buffer.allocUnsafeSlow(n));
  if (!encoded) throw new Error('warm-up: no rows won');
  return { rows: encoded.rows, bytes: encoded.pending.bytes.byteLength };
}
