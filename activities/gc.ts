import type { GcResult } from './contract';
import type { ActivityDeps } from './deps';
import { fail } from './failures';
import { isDeletableFile, isTempFile, TEMP_MIN_AGE_MS } from './gc-paths';
import { parseGenerationName } from '../src/storage/layout';
import { basenameLoc, dirnameLoc } from '../src/storage/location';
import { storageAt } from '../src/storage/open-storage';
import { raiseGcFloor } from '../src/storage/gc-floor';
import { tableFiles } from '../src/storage/table-files';
import { ProgressReporter } from './progress';
import { withCost } from './unit-cost';
import { readTableMeta } from '../src/storage/table-meta';
import { checksumFile } from '../src/storage/arrow';

// Deletes exactly the planned files, under the turn: removing a Lance data/.tmp* file
// is only safe when no writer of the base table runs, and the turn guarantees that.
// Every path is re-checked first; one bad path refuses the whole unit before anything
// is deleted.

export interface GcInput {
  table: string;
  files: string[];
  tempFiles: string[];
}

/** Raises each shard's GC.json floor to the highest generation seq about to be deleted. */
async function recordGenerationFloors(root: string, table: string, files: string[]): Promise<void> {
  const highest = new Map<string, number>();
  for (const f of files) {
    const seq = parseGenerationName(basenameLoc(f));
    if (seq === null) continue;
    const shard = basenameLoc(dirnameLoc(f));
    highest.set(shard, Math.max(highest.get(shard) ?? 0, seq));
  }
  const at = tableFiles(root, table);
  for (const [shard, seq] of highest) await raiseGcFloor(at, shard, seq);
}

export function makeGc(deps: ActivityDeps) {
  // Deleting writes nothing: bytesFreed is what went, and its cost is CPU (unit-cost.ts).
  return async (input: GcInput): Promise<GcResult> => withCost(deps, () => deleteGcFiles(deps, input, new ProgressReporter('gc', deps.faults)));
}

/** Deletes the planned files; also run inside a merge's commit when gc rides it (commit-merge.ts). */
export async function deleteGcFiles(deps: ActivityDeps, input: GcInput, progress: ProgressReporter): Promise<GcResult> {
  const root = deps.dataRoot;
  await readTableMeta(root, input.table);
  for (const f of input.files) {
    if (!isDeletableFile(root, input.table, f)) throw fail('GcRefused', `gc: refusing to delete ${f}: not a generation file or prepared batch of table ${input.table}`);
  }
  for (const f of input.tempFiles) {
    if (!isTempFile(root, input.table, f)) throw fail('GcRefused', `gc: refusing to delete ${f}: not a temporary file of table ${input.table}`);
  }
  await recordGenerationFloors(root, input.table, input.files);
  const all = [...input.files.map((f) => ({ f, temp: false })), ...input.tempFiles.map((f) => ({ f, temp: true }))];
  let deleted = 0;
  let bytesFreed = 0;
  await progress.point('commit', 'gc');
  const store = storageAt(root);
  for (const [i, { f, temp }] of all.entries()) {
    const st = await store.stat(f).catch(() => null);
    // A temp file young again would be a live writer's: leave it.
    if (st && !(temp && Date.now() - st.mtimeMs < TEMP_MIN_AGE_MS)) {
      await store.delete(f);
      // The sidecar goes after its file, so no file is ever left without one.
      if (!temp) await store.delete(checksumFile(f));
      deleted++;
      bytesFreed += st.size;
    }
    progress.report({ phase: 'commit', step: `delete ${i + 1}/${all.length}` });
  }
  return { deleted, bytesFreed };
}
