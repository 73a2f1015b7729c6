import fs from 'node:fs/promises';
import path from 'node:path';
import { scanGenerationFiles } from '../src/storage/generation-store';
import { parsePreparedName, TEMP_MARKER, tableLayout } from '../src/storage/layout';
import { readTableMeta } from '../src/storage/table-meta';
import type { GcPlan, GcPlanInput } from './contract';
import type { ActivityDeps } from './deps';
import { fail } from './failures';
import { lanceDataDir, TEMP_MIN_AGE_MS } from './gc-paths';

// Lists what gc may delete; deletes nothing (it runs outside the turn). Merged
// watermarks only grow, so a plan stays valid until its gc commits.

async function entries(dir: string): Promise<import('node:fs').Dirent[]> {
  return fs.readdir(dir, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [];
    throw err;
  });
}

async function oldEnough(file: string, now: number): Promise<boolean> {
  const st = await fs.lstat(file).catch(() => null);
  return !!st && st.isFile() && now - st.mtimeMs >= TEMP_MIN_AGE_MS;
}

async function tempFilesUnder(dir: string, now: number, out: string[]): Promise<void> {
  for (const e of await entries(dir)) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) await tempFilesUnder(p, now, out);
    else if (e.name.includes(TEMP_MARKER) && (await oldEnough(p, now))) out.push(p);
  }
}

export function makePlanGc(deps: ActivityDeps) {
  return async function planGc(input: GcPlanInput): Promise<GcPlan> {
    const root = deps.dataRoot;
    const meta = await readTableMeta(root, input.table);
    const l = tableLayout(root, input.table);
    const merged = new Map<string, number>();
    for (const m of input.mergedThrough) {
      if (!meta.shards.includes(m.shard)) throw fail('InvalidInput', `shard ${m.shard} is not a shard of table ${input.table}`);
      merged.set(m.shard, m.mergedThroughSeq);
    }
    const files: string[] = [];
    for (const [shard, through] of merged) {
      for (const g of await scanGenerationFiles(root, input.table, shard)) if (g.seq <= through) files.push(g.path);
    }
    for (const e of await entries(l.prepared)) {
      const p = parsePreparedName(e.name);
      const through = p ? merged.get(p.shard) : undefined;
      if (p && e.isFile() && through !== undefined && p.toSeq <= through) {
        files.push(path.join(l.prepared, e.name));
      }
    }
    const now = Date.now();
    const tempFiles: string[] = [];
    await tempFilesUnder(l.meta, now, tempFiles);
    for (const e of await entries(lanceDataDir(root, input.table))) {
      const p = path.join(lanceDataDir(root, input.table), e.name);
      if (e.name.startsWith('.tmp') && (await oldEnough(p, now))) tempFiles.push(p);
    }
    return { files, tempFiles };
  };
}
