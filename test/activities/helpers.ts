import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { Info } from '@temporalio/activity';
import { activityInterceptors, createActivities, type ActivityDeps } from '../../activities';
import type { IndexSpec, PreparedMerge } from '../../activities/contract';
import { shardNames } from '../../src/messages/names';
import { createTableMeta, sealGeneration } from '../../src/storage/generation-store';
import { openLanceTable } from '../../src/storage/lance-table';
import { generateRows } from '../../src/writer';
import { settleSealedHints } from '../../src/storage/sealed-hint';

// Shared set-up for activity tests: a temp storage root with one table, and a way to
// run one activity under a fresh MockActivityEnvironment (with the workers' activity
// interceptors), capturing its heartbeats.

export interface Fixture {
  root: string;
  table: string;
  shards: string[];
  acts: ReturnType<typeof createActivities>;
  cleanup(): void;
}

export async function makeFixture(opts: { shards?: number; indices?: IndexSpec[]; deps?: Partial<ActivityDeps> } = {}): Promise<Fixture> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-act-'));
  const table = 't1';
  const shards = shardNames(opts.shards ?? 2);
  await createTableMeta(root, { name: table, key: 'id', shards, indices: opts.indices ?? [] });
  return {
    root,
    table,
    shards,
    acts: createActivities({ dataRoot: root, ...opts.deps }),
    cleanup: async () => {
      await settleSealedHints(); // a hint written in the background would race the removal
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}

const nothing = (): void => undefined;
// The SDK's default logger prints every expected activity failure in full.
const quiet = { log: nothing, trace: nothing, debug: nothing, info: nothing, warn: nothing, error: nothing };

export interface Run<R> {
  result: Promise<R>;
  heartbeats: unknown[];
  env: MockActivityEnvironment;
}

/** Start one activity in its own mock environment; heartbeats are recorded as they come. */
export function start<A extends unknown[], R>(fn: (...args: A) => Promise<R>, args: A, info: Partial<Info> = {}): Run<R> {
  const env = new MockActivityEnvironment(info, { logger: quiet, interceptors: activityInterceptors });
  const heartbeats: unknown[] = [];
  env.on('heartbeat', (d: unknown) => heartbeats.push(d));
  return { result: env.run(fn, ...args), heartbeats, env };
}

export async function run<A extends unknown[], R>(fn: (...args: A) => Promise<R>, args: A, info: Partial<Info> = {}): Promise<R> {
  return start(fn, args, info).result;
}

/**
 * Seal `gens` generations of `rowsPer` rows into a shard; seed firstSeed + g makes values
 * differ per generation. A preparation covers everything its shard has sealed when it
 * starts (prepare-merge.ts), so a test that merges a part seals the rest after it.
 */
export async function sealMany(f: Fixture, shard: string, gens: number, rowsPer: number, keyRange: [number, number] = [0, 999], firstSeed = 1000): Promise<void> {
  for (let g = 0; g < gens; g++) {
    const rows = generateRows({ keys: keyRange, count: rowsPer, shard, shards: f.shards, seed: firstSeed + g });
    await sealGeneration(f.root, f.table, shard, rows);
  }
}

export async function prepareAndCommit(f: Fixture, shard: string, fromSeq: number, toSeq: number): Promise<{ prepared: PreparedMerge; version: number }> {
  const prepared = await run(f.acts.prepareMerge, [{ table: f.table, key: 'id', shard, fromSeq, toSeq }]);
  const c = await run(f.acts.commitMerge, [{ table: f.table, key: 'id', prepared }]);
  return { prepared, version: c.version };
}

/** Rows of the base table as plain, sorted, comparable values. */
export async function tableRows(f: Fixture): Promise<{ id: string; value: string; n: number; seq: string }[]> {
  const tbl = await openLanceTable(f.root, f.table);
  if (!tbl) return [];
  const rows = await tbl.query().toArray();
  return rows
    .map((r: Record<string, unknown>) => ({ id: String(r.id), value: String(r.value), n: Number(r.n), seq: String(r._seq) }))
    .sort((a, b) => Number(a.id) - Number(b.id));
}
