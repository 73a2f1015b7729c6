import fs from 'node:fs';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import { WorkflowFailedError, WorkflowUpdateStage, type WorkflowHandle } from '@temporalio/client';
import { optionalTsToMs } from '@temporalio/common/lib/time';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import type { createActivities } from '../../activities';
import type { SnapshotResult } from '../../activities/contract';
import { TableClient } from '../../src/client/table-client';
import type { PolicyOverride } from '../../src/config/policy-schema';
import { CARRIED_FORMAT, type Carried } from '../../src/policy';
import { testWorkflowBundle } from '../support/workflow-bundle';
import { installQuietRuntime } from '../../src/worker/runtime';
import * as msg from '../../workflows/messages';
import type { TableWorkflowArgs } from '../../workflows';
import { AWAIT_MERGED_BOUND_SECS } from '../../workflows/table';
import { eventually, uniqueName } from '../support/harness';
import { activityRuns, commitSummaries, historyEvents } from '../support/history';

// The workflow shell (workflows/table.ts, alarm.ts, run-unit.ts) on its own: the real
// workflow code on the suite's dev server, with mocked activities, so each test controls
// what the activities answer and when, and reads what the shell did from history.
//
// Time: the dev server has no time skipping, and TestWorkflowEnvironment.createTimeSkipping
// downloads its test server, which cannot be fetched here; so the environment is
// createFromExistingServer against the suite's server, time-driven behaviour runs on
// policies of a second or less, and where the bound is long (hours of policy time) the
// test reads the timer the shell armed from history instead of waiting for it.

type Activities = ReturnType<typeof createActivities>;

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  installQuietRuntime();
  env = await TestWorkflowEnvironment.createFromExistingServer({ address: inject('temporalAddress') });
});
afterAll(async () => env?.teardown());

/** Activities that do nothing real: merges prepare and commit at once, the rest finds nothing to do. */
function mockActivities(over: Partial<Activities> = {}): Activities {
  let version = 0;
  const acts: Activities = {
    snapshot: async () => ({ shards: [], revision: 0 }),
    prepareMerge: async (i) => ({ shard: i.shard, fromSeq: i.fromSeq, toSeq: i.toSeq, preparedPath: `/mock/${i.shard}-${i.fromSeq}-${i.toSeq}.arrow`, rows: 1, bytes: 1, attempt: 1, resumedFromFile: 0, resumedVia: null }),
    commitMerge: async () => ({ version: ++version, rows: 1 }),
    planOptimize: async () => ({ needed: true, reason: 'mock', numFragments: 2, numSmallFragments: 2, unindexedRows: 0, versionsPastRetention: 0 }),
    commitOptimize: async () => ({ version: ++version, rows: 0, fragmentsRemoved: 2, fragmentsAdded: 1, versionsPruned: 0 }),
    planIndex: async () => ({ missing: [] }),
    ensureIndex: async () => ({ version, rows: 0, built: [] }),
    planGc: async () => ({ files: [], tempFiles: [] }),
    gc: async () => ({ deleted: 0, bytesFreed: 0 }),
    observeTable: async () => {
      throw new Error('not an adopted table');
    },
    planAdopted: async () => {
      throw new Error('not an adopted table');
    },
    commitAdopted: async () => {
      throw new Error('not an adopted table');
    },
  };
  return { ...acts, ...over };
}

interface Shell {
  tables: TableClient;
  table: string;
  handle: WorkflowHandle;
  /** Stops the worker (the workflow waits for the next one). */
  stopWorker(): Promise<void>;
  startWorker(): void;
  close(): Promise<void>;
}

// Only what a test turns on happens: no periodic kinds, a snapshot only at start.
const QUIET: PolicyOverride = { periodSecs: { optimize: 0, index: 0, gc: 0 }, snapshotIntervalSecs: 3600 };

async function startShell(name: string, acts: Activities, policy: PolicyOverride, extra: Partial<TableWorkflowArgs> = {}): Promise<Shell> {
  const taskQueue = uniqueName(`tq-shell-${name}`);
  const bundle = await testWorkflowBundle();
  let worker: Worker | null = null;
  let running: Promise<void> = Promise.resolve();
  const startWorker = (): void => {
    void Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle: bundle, activities: acts }).then((w) => {
      worker = w;
      running = w.run();
    });
  };
  const stopWorker = async (): Promise<void> => {
    await eventually(async () => worker, 'the worker created');
    worker!.shutdown();
    await running;
    worker = null;
  };
  startWorker();
  const tables = new TableClient(env.client, taskQueue);
  const table = uniqueName(name);
  await tables.start({ table, key: 'id', shards: ['s0', 's1'], policy, ...extra });
  const handle = tables.handle(table);
  return {
    tables,
    table,
    handle,
    stopWorker,
    startWorker,
    async close() {
      await handle.terminate('test over').catch(() => undefined);
      if (worker) await stopWorker();
    },
  };
}

/** The durations (ms) of the timers the shell started, in order; `afterEventId` only those after that event. */
/** The shell's own timers (the alarm): without the bound of an awaitMerged that had to wait (AWAIT_MERGED_BOUND_SECS). */
async function timersStarted(handle: WorkflowHandle, afterEventId = 0): Promise<number[]> {
  return (await historyEvents(handle, 'TIMER_STARTED'))
    .filter((e) => Number(e.eventId) > afterEventId)
    .map((e) => optionalTsToMs(e.timerStartedEventAttributes?.startToFireTimeout) ?? -1)
    .filter((ms) => ms !== AWAIT_MERGED_BOUND_SECS * 1000);
}

const demand = (shard: string, seq: number) => ({ shard, sealedThroughSeq: seq, revision: seq });

test('the alarm is re-armed when the earliest deadline moves earlier or is gone, not on every signal (a later one: test/integration/seal-cost.test.ts)', async () => {
  const shell = await startShell('alarm', mockActivities(), QUIET);
  try {
    const { tables, table, handle } = shell;
    await tables.pause(table); // no units: the only deadline is the next snapshot
    // The initial snapshot has come back and the pause is in: the one timer is the next
    // snapshot's, snapshotIntervalSecs after the pause. (A snapshot that came back before
    // the pause armed the long period first, which the pause then pulled in.)
    await eventually(async () => {
      const s = await tables.state(table);
      return s.paused && !s.snapshot.running && (await timersStarted(handle)).at(-1) === 3_600_000;
    }, 'the snapshot timer');
    const armed = await timersStarted(handle);
    const canceled = (await historyEvents(handle, 'TIMER_CANCELED')).length;
    for (let seq = 1; seq <= 25; seq++) await handle.signal(msg.demand, demand('s0', seq));
    await eventually(async () => (await tables.state(table)).shards[0]!.sealedThroughSeq === 25, 'all 25 demands folded');
    expect(await timersStarted(handle)).toEqual(armed);
    expect(await historyEvents(handle, 'TIMER_CANCELED')).toHaveLength(canceled);

    // A deadline that moves earlier: the one timer is replaced, once.
    await tables.setPolicy(table, { snapshotIntervalSecs: 1800 });
    expect(await timersStarted(handle)).toEqual([...armed, 1_800_000]);
    expect(await historyEvents(handle, 'TIMER_CANCELED')).toHaveLength(canceled + 1);

    // A deadline that is gone before it fires (a bump replaced by a longer one): the timer
    // is re-armed for the next deadline, though later, instead of firing for nothing.
    const fired = (await historyEvents(handle, 'TIMER_FIRED')).length;
    await tables.bump(table, { kind: 'gc', class: 2, reason: 'test', forSecs: 60 });
    await eventually(async () => (await timersStarted(handle)).at(-1) === 60_000, 'the timer of the bump expiry');
    await tables.bump(table, { kind: 'gc', class: 2, reason: 'test', forSecs: 120 });
    await eventually(async () => (await timersStarted(handle)).at(-1) === 120_000, 'the timer of the new bump expiry');
    expect(await historyEvents(handle, 'TIMER_CANCELED')).toHaveLength(canceled + 3);
    expect(await historyEvents(handle, 'TIMER_FIRED')).toHaveLength(fired);

  } finally {
    await shell.close();
  }
});

test('a commit-ready unit is promoted after maxTurnWaitSecs while the turn is held, and goes before the merges then', async () => {
  // The first merge commit holds the turn until the test lets it go; meanwhile a merge
  // of the other shard (class 2) and optimize (class 3) become commit-ready and wait.
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let commits = 0;
  const acts = mockActivities({
    commitMerge: async (i) => {
      if (++commits === 1) await held;
      return { version: commits, rows: i.prepared.rows };
    },
  });
  const shell = await startShell('promote', acts, { ...QUIET, periodSecs: { optimize: 0, index: 0, gc: 0 }, maxTurnWaitSecs: { optimize: 1 } });
  try {
    const { tables, table, handle } = shell;
    await handle.signal(msg.demand, demand('s0', 1));
    await eventually(async () => (await tables.state(table)).turn?.unitId === 'merge/s0', 'merge/s0 holding the turn');
    // Asked for at its own class (3): a bumped optimize is a unit of its own, where on a
    // table this small it would otherwise ride the next merge (src/policy/rides.ts).
    await handle.signal(msg.bump, { kind: 'optimize', class: 3, reason: 'promotion under test' });
    await handle.signal(msg.demand, demand('s1', 1));
    // Promotion is the only way optimize can pass merge/s1: its base class is 3, merge's 2.
    const promoted = await eventually(async () => {
      const s = await tables.state(table);
      return s.queue.find((q) => q.unitId === 'optimize')?.class === 1 && s.queue.some((q) => q.unitId === 'merge/s1') ? s : null;
    }, 'optimize promoted while merge/s0 holds the turn', 30_000);
    expect(promoted.queue.map((q) => [q.unitId, q.class])).toEqual([
      ['optimize', 1],
      ['merge/s1', 2],
    ]);
    // The promotion deadline, 1 s after optimize's plan came back, was the one timer's
    // (armed then, or for what was left when an earlier timer fired).
    const planned = (await activityRuns(handle)).find((r) => r.type === 'planOptimize')!;
    expect(planned.outcome).toBe('completed');
    const history = (await handle.fetchHistory()).events ?? [];
    const atMs = (id: number) => optionalTsToMs(history.find((e) => Number(e.eventId) === id)?.eventTime) ?? 0;
    const fireAts = history
      .filter((e) => Number(e.eventId) > planned.closedEventId! && e.timerStartedEventAttributes)
      .map((e) => atMs(Number(e.eventId)) + (optionalTsToMs(e.timerStartedEventAttributes!.startToFireTimeout) ?? 0));
    const due = atMs(planned.closedEventId!) + 1000;
    expect(fireAts.some((t) => t >= due - 50 && t <= due + 1000), `timers due ${fireAts.map((t) => t - due).join(', ')} ms from the promotion`).toBe(true);

    release();
    await handle.executeUpdate(msg.awaitMerged, { args: [{ shard: 's1', seq: 1 }] });
    const summaries = await commitSummaries(handle);
    expect(summaries.slice(0, 3).map((x) => x.split(':')[0])).toEqual(['merge s0 seq 1-1', 'optimize', 'merge s1 seq 1-1']);
    expect(summaries[1]).toMatch(/^optimize: class 1, promoted after 1 s \(waited \d+(\.\d)? s\)$/);
    expect((await tables.state(table)).counters.maxTurnWaitSecs.optimize).toBeGreaterThanOrEqual(1);
  } finally {
    release();
    await shell.close();
  }
});

test('a failed commit backs off on the durable timer: base * 2^(n-1), then commits', async () => {
  let attempts = 0;
  const acts = mockActivities({
    commitMerge: async (i) => {
      if (++attempts <= 2) throw ApplicationFailure.retryable(`mock failure ${attempts}`, 'MockFailure');
      return { version: 7, rows: i.prepared.rows };
    },
  });
  // Backoffs of 0.2 s and 0.4 s; hours (commitRetryMaxSecs) would be armed the same way.
  const shell = await startShell('backoff', acts, { ...QUIET, commitRetryBaseSecs: 0.2, commitRetryMaxSecs: 7200 });
  try {
    const { tables, table, handle } = shell;
    await handle.signal(msg.demand, demand('s0', 1));
    const merged = await handle.executeUpdate(msg.awaitMerged, { args: [{ shard: 's0', seq: 1 }] });
    expect(merged).toEqual({ shard: 's0', seq: 1, mergedThroughSeq: 1, version: 7, merged: true });
    const commits = (await activityRuns(handle)).filter((r) => r.type === 'commitMerge');
    expect(commits.map((r) => r.outcome)).toEqual(['failed', 'failed', 'completed']);
    // Exactly the backoffs, each armed as the table's one timer when the failure came in ...
    // (The others are the snapshot's, an hour away.)
    expect((await timersStarted(handle)).filter((ms) => ms < 60_000)).toEqual([200, 400]);
    // ... and no retry before its backoff ended (both on the workflow clock).
    expect(commits[1]!.decidedAtMs - commits[0]!.seenClosedAtMs!).toBeGreaterThanOrEqual(200);
    expect(commits[2]!.decidedAtMs - commits[1]!.seenClosedAtMs!).toBeGreaterThanOrEqual(400);
    expect((await tables.state(table)).counters).toMatchObject({ retries: 2, stalls: 0, turns: { merge: 1 } });
  } finally {
    await shell.close();
  }
});

test('awaitMerged answers merged=false while the run drains for continue-as-new, and the next run carries the state', async () => {
  const shell = await startShell('drain', mockActivities(), QUIET, { continueAsNewAtEvents: 80 });
  try {
    const { tables, table, handle } = shell;
    const firstRun = (await handle.describe()).runId;
    await tables.pause(table, { kind: 'merge' });
    await handle.signal(msg.demand, demand('s0', 1));
    const update = await handle.startUpdate(msg.awaitMerged, { args: [{ shard: 's0', seq: 1 }], waitForStage: WorkflowUpdateStage.ACCEPTED });
    expect((await handle.fetchHistory()).events!.length).toBeLessThan(80);
    // Signals grow the history until the run drains; the waiting update is answered then.
    let answered = false;
    const result = update.result().finally(() => (answered = true));
    for (let seq = 2; !answered && seq < 200; seq++) {
      await handle.signal(msg.demand, demand('s1', seq));
      await Promise.race([result, new Promise((r) => setTimeout(r, 50))]);
    }
    expect(await result).toEqual({ shard: 's0', seq: 1, mergedThroughSeq: 0, version: 0, merged: false });
    await eventually(async () => (await handle.describe()).runId !== firstRun, 'the next run');
    const s = await tables.state(table);
    expect(s.pausedKinds).toEqual(['merge']);
    expect(s.shards.map((x) => [x.shard, x.sealedThroughSeq, x.mergedThroughSeq])).toEqual([
      ['s0', 1, 0],
      ['s1', expect.any(Number), 0],
    ]);
    expect(s.shards[1]!.sealedThroughSeq).toBeGreaterThanOrEqual(2);
  } finally {
    await shell.close();
  }
});

test('setPolicy: the validator rejects a bad override before anything reaches history; a good one applies', async () => {
  const shell = await startShell('policy', mockActivities(), QUIET);
  try {
    const { tables, table, handle } = shell;
    const err = await tables.setPolicy(table, { maxTurnWaitSecs: { optimize: 0 } }).catch((e: Error & { cause?: Error }) => e.cause?.message ?? e.message);
    expect(err).toBe('maxTurnWaitSecs.optimize: must be an integer in [1, 86400]');
    expect(await historyEvents(handle, 'WORKFLOW_EXECUTION_UPDATE_ACCEPTED')).toEqual([]);
    expect((await tables.state(table)).policy.maxTurnWaitSecs.optimize).toBe(120);

    const p = await tables.setPolicy(table, { maxTurnWaitSecs: { optimize: 30 } });
    expect(p.maxTurnWaitSecs).toEqual({ merge: 60, optimize: 30, index: 300, gc: 600 });
    expect(await historyEvents(handle, 'WORKFLOW_EXECUTION_UPDATE_ACCEPTED')).toHaveLength(1);
    expect((await tables.state(table)).policy.maxTurnWaitSecs.optimize).toBe(30);
  } finally {
    await shell.close();
  }
});

test('the signal inbox is bounded: signals past it are dropped, and the periodic snapshot recovers the demand', async () => {
  // What the generation store holds: s0 sealed through 6.
  let sealed: SnapshotResult = { shards: [], revision: 0 };
  const acts = mockActivities({ snapshot: async () => sealed });
  const shell = await startShell('inbox', acts, QUIET, { maxInbox: 3 });
  try {
    const { tables, table, handle } = shell;
    await tables.pause(table, { kind: 'merge' });
    // The pause is an operator action, which brings the next scan nearer: processed after
    // the first snapshot, it re-arms that timer, so a second timer may follow the first.
    await eventually(async () => (await timersStarted(handle)).length >= 1, 'the first snapshot done');
    await eventually(async () => (await tables.state(table)).pausedKinds.includes('merge'), 'the pause applied');
    // With no worker, the six signals wait in history and reach the workflow in one activation.
    await shell.stopWorker();
    for (let seq = 1; seq <= 6; seq++) await handle.signal(msg.demand, demand('s0', seq));
    shell.startWorker();
    await eventually(async () => {
      const events = (await handle.fetchHistory()).events ?? [];
      const lastSignal = events.map((e) => !!e.workflowExecutionSignaledEventAttributes).lastIndexOf(true);
      return events.slice(lastSignal).some((e) => e.workflowTaskCompletedEventAttributes);
    }, 'the signals processed');
    expect((await tables.state(table)).shards[0]).toMatchObject({ shard: 's0', sealedThroughSeq: 3 });

    sealed = { shards: [{ shard: 's0', sealedThroughSeq: 6, revision: 6 }], revision: 6 };
    await tables.setPolicy(table, { snapshotIntervalSecs: 1 });
    await eventually(async () => (await tables.state(table)).shards[0]!.sealedThroughSeq === 6, 'the snapshot recovering seq 6', 30_000);
  } finally {
    await shell.close();
  }
});

test('a commit no worker takes within commitAdmissionWaitSecs gives the turn back, says what it waits for, and commits once a worker is back', async () => {
  // Workflow tasks and activity tasks on separate workers, so activities can stop while
  // the workflow goes on: a stopped activity worker is a fleet without headroom.
  const taskQueue = uniqueName('tq-shell-headroom');
  const bundle = await testWorkflowBundle();
  const wf = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle: bundle });
  const wfRun = wf.run();
  const MiB = 2 ** 20;
  let prepareStarted = false;
  const acts = mockActivities({
    // Long enough to stop the activity worker while it runs: its result still comes back.
    prepareMerge: async (i) => {
      prepareStarted = true;
      await new Promise((r) => setTimeout(r, 1500));
      return { shard: i.shard, fromSeq: i.fromSeq, toSeq: i.toSeq, preparedPath: `/mock/${i.shard}.arrow`, rows: 1, bytes: 30 * MiB, attempt: 1, resumedFromFile: 0, resumedVia: null };
    },
  });
  const startActivities = async () => {
    const w = await Worker.create({ connection: env.nativeConnection, taskQueue, activities: acts, shutdownGraceTime: '30 s' });
    return { w, run: w.run() };
  };
  let act = await startActivities();
  const tables = new TableClient(env.client, taskQueue);
  const table = uniqueName('headroom');
  await tables.start({ table, key: 'id', shards: ['s0', 's1'], policy: { ...QUIET, commitAdmissionWaitSecs: 1, commitRetryMaxSecs: 2 } });
  const handle = tables.handle(table);
  try {
    // The activity worker stops polling while the preparation runs; its commit then finds no worker.
    await handle.signal(msg.demand, demand('s0', 1));
    await eventually(async () => prepareStarted, 'the preparation running');
    act.w.shutdown();
    await act.run;
    // 64 MiB + 10 x 30 MiB: what its commit reserves.
    const line = 'waiting for 364 MiB of headroom';
    const waiting = await eventually(async () => {
      const s = await tables.status(table);
      return s.queue.find((q) => q.unitId === 'merge/s0' && q.reason.startsWith(line)) ? s : null;
    }, 'the commit back in the queue, waiting for headroom');
    expect(waiting.turn).toBeNull();
    expect(waiting.counters.headroomWaits).toBeGreaterThanOrEqual(1);
    const meta = (await handle.query('__temporal_workflow_metadata')) as { currentDetails?: string };
    expect(meta.currentDetails).toContain(`**merge/s0:** ${line} (the turn is free meanwhile)`);
    // It was never started: the task timed out in the queue (schedule-to-start).
    const first = (await activityRuns(handle)).find((r) => r.type === 'commitMerge');
    expect(first).toMatchObject({ outcome: 'timedOut', startedAtMs: null });

    act = await startActivities();
    const merged = await handle.executeUpdate(msg.awaitMerged, { args: [{ shard: 's0', seq: 1 }] });
    expect(merged.mergedThroughSeq).toBe(1);
    const commits = (await activityRuns(handle)).filter((r) => r.type === 'commitMerge');
    expect(commits.at(-1)!.outcome).toBe('completed');
    // No busy retry: every commit after a timed-out one waited at least the base wait (1 s).
    for (let i = 1; i < commits.length; i++) expect(commits[i]!.decidedAtMs - commits[i - 1]!.seenClosedAtMs!).toBeGreaterThanOrEqual(1000);
    expect((await tables.state(table)).counters).toMatchObject({ retries: 0, turns: { merge: 1 } });
  } finally {
    await handle.terminate('test over').catch(() => undefined);
    for (const w of [act.w, wf]) if (w.getState() === 'RUNNING') w.shutdown();
    await Promise.all([act.run, wfRun]).catch(() => undefined);
  }
});

test('a run handed a carried state of release 0.1.0 carries on from it: the same watermarks, its prepared merges committed', async () => {
  const fixture = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'carried-0.1.0.json'), 'utf8')) as { inputs: { from: string; carried: Carried }[] };
  const { carried } = fixture.inputs.find((i) => i.from.startsWith('bump-4'))!;
  const shell = await startShell('carried-0-1-0', mockActivities(), QUIET, { carried });
  try {
    const { tables, table } = shell;
    const sealed = carried.state.shards.map((s) => [s.shard, s.sealedThroughSeq]);
    // The mocks merge whatever is sealed: every shard merged through what 0.1.0 knew was sealed.
    const s = await eventually(async () => {
      const st = await tables.state(table);
      return st.shards.every((x) => x.mergedThroughSeq === x.sealedThroughSeq) ? st : null;
    }, 'the carried backlog merged');
    expect(s.shards.map((x) => [x.shard, x.sealedThroughSeq])).toEqual(sealed);
    expect(s.counters.merges).toBeGreaterThan(carried.state.counters.merges);
    expect(s.counters.turns.optimize).toBe(carried.state.counters.turns.optimize);
  } finally {
    await shell.close();
  }
});

test('a carried state this release cannot read fails the run for good (no workflow task failing over and over)', async () => {
  const bad = { formatVersion: CARRIED_FORMAT, state: { table: 'x', shards: 'none' } } as unknown as Carried;
  const shell = await startShell('carried-bad', mockActivities(), QUIET, { carried: bad });
  try {
    const err = await shell.handle.result().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const cause = (err as WorkflowFailedError).cause;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect(cause).toMatchObject({ type: 'InvalidCarriedState', nonRetryable: true });
    expect((cause as ApplicationFailure).message).toMatch(/^carried state: /);
    expect(await historyEvents(shell.handle, 'WORKFLOW_TASK_FAILED')).toEqual([]);
  } finally {
    await shell.close();
  }
});
