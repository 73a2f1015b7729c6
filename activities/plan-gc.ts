import { scanGenerationFiles } from '../src/storage/generation-store';
import { parsePreparedName, TEMP_MARKER, tableLayout } from '../src/storage/layout';
import { joinLoc } from '../src/storage/location';
import { storageAt } from '../src/storage/open-storage';
import type { Storage } from '../src/storage/storage';
import { readTableMeta } from '../src/storage/table-meta';
import type { GcPlan, GcPlanInput, PlanGcResult } from './contract';
import type { ActivityDeps } from './deps';
import { fail } from './failures';
import { lanceDataDir, TEMP_MIN_AGE_MS } from './gc-paths';
import { withCost } from './unit-cost';

// Lists what gc may delete; deletes nothing (it runs outside the turn). Merged
// watermarks only grow, so a plan stays valid until its gc commits.

async function oldEnough(store: Storage, file: string, now: number): Promise<boolean> {
  const st = await store.stat(file).catch(() => null);
  return !!st && now - st.mtimeMs >= TEMP_MIN_AGE_MS;
}

async function tempFilesUnder(store: Storage, dir: string, now: number, out: string[]): Promise<void> {
  for (const e of await store.list(dir)) {
    const p = joinLoc(dir, e.name);
    if (e.isDir) await tempFilesUnder(store, p, now, out);
    else if (e.name.includes(TEMP_MARKER) && (await oldEnough(store, p, now))) out.push(p);
  }
}

export function makePlanGc(deps: ActivityDeps) {
  // Listings only: its cost is CPU (unit-cost.ts).
  return async (input: GcPlanInput): Promise<PlanGcResult> => withCost(deps, () => planGc(deps, input));
}

/** The plan itself: also run inside a merge's commit when gc rides it (commit-merge.ts). */
export async function planGc(deps: ActivityDeps, input: GcPlanInput): Promise<GcPlan> {
  const root = deps.dataRoot;
  const meta = await readTableMeta(root, input.table);
  const l = tableLayout(root, input.table);
  const store = storageAt(root);
  const merged = new Map<string, number>();
  for (const m of input.mergedThrough) {
    if (!meta.shards.includes(m.shard)) throw fail('InvalidInput', `shard ${m.shard} is not a shard of table ${input.table}`);
    merged.set(m.shard, m.mergedThroughSeq);
  }
  const files: string[] = [];
  for (const [shard, through] of merged) {
    for (const g of await scanGenerationFiles(root, input.table, shard)) if (g.seq <= through) files.push(g.path);
  }
  for (const e of await store.list(l.prepared)) {
    const p = parsePreparedName(e.name);
    const through = p ? merged.get(p.shard) : undefined;
    if (p && !e.isDir && through !== undefined && p.toSeq <= through) {
      files.push(joinLoc(l.prepared, e.name));
    }
  }
  const now = Date.now();
  const tempFiles: string[] = [];
  await tempFilesUnder(store, l.meta, now, tempFiles);
  for (const e of await store.list(lanceDataDir(root, input.table))) {
    const p = joinLoc(lanceDataDir(root, input.table), e.name);
    if (e.name.startsWith('.tmp') && (await oldEnough(store, p, now))) tempFiles.push(p);
  }
  return { files, tempFiles };
}
