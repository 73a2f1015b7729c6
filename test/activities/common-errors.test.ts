import { ApplicationFailure } from '@temporalio/activity';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { PreparedMerge } from '../../activities/contract';
import { makeFixture, run, type Fixture } from './helpers';

// The activity interceptor is the one error wrapper: every activity, asked about a table
// that does not exist, fails non-retryably with type TableNotFound naming the table.

let f: Fixture;
beforeAll(async () => {
  f = await makeFixture();
});
afterAll(() => f.cleanup());

const table = 'nope';
const prepared: PreparedMerge = { shard: 's0', fromSeq: 1, toSeq: 1, preparedPath: '/nope.arrow', rows: 1, bytes: 1, attempt: 1, resumedFromFile: 0, resumedVia: null };

// Adopted tables' activities find their table by its URI, not by table.json (activities/adopted.ts).
type ByTableJson = Exclude<keyof Fixture['acts'], 'observeTable' | 'planAdopted' | 'commitAdopted'>;

const calls: Record<ByTableJson, () => Promise<unknown>> = {
  snapshot: () => run(f.acts.snapshot, [{ table }]),
  prepareMerge: () => run(f.acts.prepareMerge, [{ table, key: 'id', shard: 's0', fromSeq: 1, toSeq: 1 }]),
  commitMerge: () => run(f.acts.commitMerge, [{ table, key: 'id', prepared }]),
  planOptimize: () => run(f.acts.planOptimize, [{ table }]),
  commitOptimize: () => run(f.acts.commitOptimize, [{ table, retentionSecs: 0 }]),
  planIndex: () => run(f.acts.planIndex, [{ table }]),
  ensureIndex: () => run(f.acts.ensureIndex, [{ table }]),
  planGc: () => run(f.acts.planGc, [{ table, mergedThrough: [] }]),
  gc: () => run(f.acts.gc, [{ table, files: [], tempFiles: [] }]),
};

it.each(Object.keys(calls) as (keyof typeof calls)[])('%s on an unknown table fails non-retryably as TableNotFound', async (name) => {
  const err = await calls[name]().then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  expect(err).toMatchObject({ type: 'TableNotFound', nonRetryable: true, details: [{ table: 'nope' }] });
  expect((err as Error).message).toMatch(/^table nope does not exist under /);
});
