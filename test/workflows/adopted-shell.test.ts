import { ApplicationFailure } from '@temporalio/activity';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import type { createActivities } from '../../activities';
import type { AdoptedPlan, CommitAdoptedResult } from '../../activities/adopted';
import { TableClient } from '../../src/client/table-client';
import type { PolicyOverride } from '../../src/config/policy-schema';
import type { Observation } from '../../src/policy/types';
import { testWorkflowBundle } from '../support/workflow-bundle';
import { installQuietRuntime } from '../../src/worker/runtime';
import type { TableWorkflowArgs } from '../../workflows';
import { eventually, uniqueName } from '../support/harness';
import { recordHistory } from '../support/record-history';

// The table workflow of an adopted table (workflows/table.ts, adopted-units.ts) with
// mocked activities: what shadow and active mode do with the core's decisions, and
// what the log for shadow-report records. See table-shell.test.ts for the set-up.

type Activities = ReturnType<typeof createActivities>;

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  installQuietRuntime();
  env = await TestWorkflowEnvironment.createFromExistingServer({ address: inject('temporalAddress') });
});
afterAll(async () => env?.teardown());

const notHere = async (): Promise<never> => {
  throw new Error('not used by an adopted table');
};

const look = (o: Partial<Observation> = {}): Observation => ({ atMs: Date.now(), version: 3, rows: 100, bytes: 6000, fragments: 6, smallFragments: 6, unindexedRows: 0, indices: 0, ...o });
const plan: AdoptedPlan = { needed: true, reason: '6 small fragments of 6 (compact at 2)', numFragments: 6, numSmallFragments: 6, unindexedRows: 0, versionsPastRetention: 0, predictedBytes: 6000, staleIndices: [] };

function adoptedActivities(over: Partial<Activities>): Activities {
  return {
    snapshot: notHere,
    prepareMerge: notHere,
    commitMerge: notHere,
    planOptimize: notHere,
    commitOptimize: notHere,
    planIndex: notHere,
    ensureIndex: notHere,
    planGc: notHere,
    gc: notHere,
    observeTable: async () => look(),
    planAdopted: async (i) => ({ ...plan, needed: i.kind === 'optimize' }),
    commitAdopted: notHere,
    ...over,
  } as Activities;
}

// Optimize due every second while the table has 2 small fragments; index and gc off.
const POLICY: PolicyOverride = { periodSecs: { optimize: 1, index: 0, gc: 0 }, snapshotIntervalSecs: 1, snapshotMaxIntervalSecs: 2, compactAtSmallFragments: 2, commitRetryBaseSecs: 0.2, commitRetryMaxSecs: 1 };

async function startAdopted(name: string, acts: Activities, extra: Partial<TableWorkflowArgs> = {}) {
  const taskQueue = uniqueName(`tq-adopted-${name}`);
  const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle: await testWorkflowBundle(), activities: acts });
  const running = worker.run();
  const tables = new TableClient(env.client, taskQueue);
  const table = uniqueName(name);
  await tables.start({ table, key: '', shards: [], policy: POLICY, adopted: { uri: `/outside/${table}.lance` }, ...extra });
  return {
    tables,
    table,
    async close() {
      await tables.handle(table).terminate('test over').catch(() => undefined);
      worker.shutdown();
      await running;
    },
  };
}

test("shadow mode: decisions are recorded and nothing is committed; the version stays the table's", async () => {
  let commits = 0;
  const s = await startAdopted('shadow', adoptedActivities({ commitAdopted: async () => (commits++, notHere()) }));
  try {
    const v = await eventually(async () => {
      const st = await s.tables.state(s.table);
      return (st.adoptedLog?.totals.optimize.decided ?? 0) >= 2 && st;
    }, 'two optimize decisions');
    expect(commits).toBe(0);
    expect(v.adopted).toMatchObject({ mode: 'shadow', observed: { version: 3, smallFragments: 6 } });
    expect(v.version).toBe(3);
    expect(v.adoptedLog!.totals.optimize.carriedOut).toBe(0);
    expect(v.adoptedLog!.decisions[0]).toMatchObject({ kind: 'optimize', reason: plan.reason, predictedBytes: 6000, version: 3, fragments: 6, carriedOut: false });
    expect(v.counters.turns.optimize).toBeGreaterThanOrEqual(2);
    // The first look is in the log; the same look again is not.
    expect(v.adoptedLog!.samples).toHaveLength(1);
  } finally {
    await s.close();
  }
});

test("active mode: a commit's result reaches the state (version, look, conflicts) and its look is logged as Turnstile's", async () => {
  let version = 3;
  let commits = 0;
  const acts = adoptedActivities({
    observeTable: async () => look({ version, smallFragments: commits > 0 ? 1 : 6, fragments: commits > 0 ? 1 : 6 }),
    planAdopted: async () => ({ ...plan, needed: commits === 0 }),
    commitAdopted: async (): Promise<CommitAdoptedResult> => {
      commits++;
      version++;
      return { version, rows: 100, conflicts: 2, fragmentsRemoved: 6, fragmentsAdded: 1, versionsPruned: 0, indicesRebuilt: [], observation: look({ version, fragments: 1, smallFragments: 1 }) } as CommitAdoptedResult;
    },
  });
  const s = await startAdopted('active', acts);
  try {
    await eventually(async () => (await s.tables.state(s.table)).adopted?.observed !== null, 'the first look');
    expect(await s.tables.setMode(s.table, 'active')).toBe('active');
    const v = await eventually(async () => {
      const st = await s.tables.state(s.table);
      return st.adoptedLog?.samples.some((x) => x.version === 4) && st;
    }, "the commit's look in the log");
    expect(commits).toBe(1);
    expect(v.version).toBe(4);
    expect(v.counters.commitConflicts).toBe(2);
    expect(v.adoptedLog!.totals.optimize).toMatchObject({ carriedOut: 1 });
    expect(v.adoptedLog!.samples.at(-1)).toMatchObject({ version: 4, fragments: 1, ours: true });
    await s.tables.handle(s.table).terminate('recorded');
    await recordHistory(env.client, s.tables.handle(s.table), 'adopted-active');
  } finally {
    await s.close();
  }
});

test('active mode: a commit that lost its races counts them from the failure details, and the unit tries again', async () => {
  let attempts = 0;
  const acts = adoptedActivities({
    commitAdopted: async () => {
      attempts++;
      throw ApplicationFailure.retryable('commit conflict: lost 3 races with outside writers (Retryable commit conflict)', 'CommitConflict', { conflicts: 3 });
    },
  });
  const s = await startAdopted('conflicts', acts);
  try {
    await eventually(async () => (await s.tables.state(s.table)).adopted?.observed !== null, 'the first look');
    await s.tables.setMode(s.table, 'active');
    const v = await eventually(async () => {
      const st = await s.tables.state(s.table);
      return (st.counters.commitConflicts ?? 0) >= 6 && st;
    }, 'two failed commits');
    expect(v.counters.commitConflicts! % 3).toBe(0);
    expect(v.counters.commitConflicts).toBe(3 * attempts);
    expect(v.version).toBe(3);
  } finally {
    await s.close();
  }
});

// An active decision is logged when its commit ends, as carried out only if it committed:
// shadow-report's "by Turnstile" commits count no attempt that changed nothing.
test('active mode: a commit that failed is not counted as carried out', async () => {
  const acts = adoptedActivities({
    commitAdopted: async () => {
      throw ApplicationFailure.retryable('commit conflict: lost 3 races with outside writers', 'CommitConflict', { conflicts: 3 });
    },
  });
  const s = await startAdopted('failed', acts);
  try {
    await eventually(async () => (await s.tables.state(s.table)).adopted?.observed !== null, 'the first look');
    await s.tables.setMode(s.table, 'active');
    const v = await eventually(async () => {
      const st = await s.tables.state(s.table);
      return (st.counters.commitConflicts ?? 0) >= 6 && st;
    }, 'two failed commits');
    expect(v.adoptedLog!.totals.optimize.carriedOut).toBe(0);
  } finally {
    await s.close();
  }
});

test('the mode and the log survive continue-as-new', async () => {
  const s = await startAdopted('carried', adoptedActivities({}), { continueAsNewAtEvents: 40 });
  try {
    await eventually(async () => (await s.tables.state(s.table)).adopted?.observed !== null, 'the first look');
    // Shadow again after active, so no commit activity is needed; the mode set last must survive.
    await s.tables.setMode(s.table, 'active');
    await s.tables.setMode(s.table, 'shadow');
    const first = await s.tables.state(s.table);
    const since = first.adoptedLog!.sinceMs;
    const runId = (await s.tables.handle(s.table).describe()).runId;
    await eventually(async () => (await s.tables.handle(s.table).describe()).runId !== runId, 'a continue-as-new', 60_000);
    const v = await eventually(async () => {
      const st = await s.tables.state(s.table);
      return st.adoptedLog && st.adoptedLog.totals.optimize.decided > first.adoptedLog!.totals.optimize.decided && st;
    }, 'more decisions in the new run');
    expect(v.adopted).toMatchObject({ uri: `/outside/${s.table}.lance`, mode: 'shadow' });
    expect(v.adoptedLog!.sinceMs).toBe(since);
    expect(v.adoptedLog!.decisions.slice(0, first.adoptedLog!.decisions.length)).toEqual(first.adoptedLog!.decisions);
    await s.tables.handle(s.table).terminate('recorded');
    await recordHistory(env.client, s.tables.handle(s.table), 'adopted-continue-as-new');
  } finally {
    await s.close();
  }
});
