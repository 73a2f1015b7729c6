import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, expect, test, vi } from 'vitest';
import { createTableMeta, sealGeneration } from '../../src/storage/generation-store';
import { generateRows } from '../../src/writer';
import { TableWriter, workflowArgsFor } from '../../src/client/table-writer';
import { MergeWaiter } from '../../src/client/merge-waiter';
import type { PolicyOverride } from '../../src/config/policy-schema';
import { shardNames } from '../../src/messages/names';
import * as msg from '../../workflows/messages';
import { eventually, startHarness, uniqueName, type Harness } from '../support/harness';
import { expectMergedExactly } from '../support/expect-exact';
import { Load } from '../support/load';
import { activityRuns, activityRunsOf, chainHistories, continueAsNewGaps, historyEvents, isCommit, longestTurnMs } from '../support/history';
import { recordHistory } from '../support/record-history';
import { sleep } from '../../src/util/sleep';
import { STICKY_QUEUE_TIMEOUT_SECS } from '../../src/worker/create-worker';
import type { FreezePoint } from '../../activities/deps';

// The turn scheduler on the real server: bounded waits under a hot merger, bumps,
// pauses, continue-as-new under load, and bad input that must not hurt the workflow.

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ name: 'sched' });
});
afterAll(async () => h?.close());

async function newTable(prefix: string, policy: PolicyOverride, extra: { continueAsNewAtEvents?: number } = {}, hh: Harness = h) {
  const table = uniqueName(prefix);
  const meta = await createTableMeta(hh.dataRoot, { name: table, key: 'id', shards: shardNames(2), indices: [] });
  await hh.tables.start({ ...workflowArgsFor(meta), policy, ...extra });
  const writer = await TableWriter.open(hh.tables, hh.dataRoot, table);
  return { table, writer, handle: hh.tables.handle(table) };
}

const expectExact = (table: string, load: Load, hh: Harness = h) => expectMergedExactly(hh, table, load, ['s0', 's1']);

// Only merges and the kind under test: index and gc never become due by themselves.
const QUIET = { periodSecs: { index: 0, gc: 0 } };

test('a commit-ready optimize waits at most maxTurnWaitSecs plus the longest turn behind a hot merger', async () => {
  // Commits of merges take 700 ms longer (a large table): while one shard's merge holds
  // the turn the other shard's is prepared, so a merge is always commit-ready. Optimize
  // takes 1.2 s, also its first run riding a merge: one under a second would go on riding
  // the merges' turns (src/policy/rides.ts) and never wait for a turn of its own, which
  // is the bound under test.
  const slowMs = (p: FreezePoint) => (p.phase !== 'commit' ? 0 : p.work === 'optimize' ? 1200 : p.activity === 'commitMerge' && p.work === undefined ? 700 : 0);
  const slow = await startHarness({
    name: 'hot',
    deps: { faults: { freezeProgress: (p) => (slowMs(p) > 0 ? sleep(slowMs(p)) : undefined) } },
  });
  try {
    const { table, writer, handle } = await newTable('hot', {
      ...QUIET,
      periodSecs: { optimize: 2, index: 0, gc: 0 },
      maxTurnWaitSecs: { optimize: 3 },
      // Merges may take every turn in a row: only the promotion timer can get optimize in.
      maxConsecutiveTurns: { merge: 1000 },
      // Merges stay out of class 1: a backlog over softBacklog would put them there too,
      // and within class 1 the higher aged priority goes first (invariant 3), which may
      // cost the promoted optimize one more turn. That is not the bound under test.
      softBacklog: 100_000,
      hardBacklog: 200_000,
      // Runs continue as new at the default bound (500 events, every ~8 s here): the
      // bound holds across continue-as-new too (see CONTINUE_AS_NEW_SECS below).
    }, {}, slow);
    // Paced (about 20k rows a second): a unit prepared while the other shard commits then
    // stays well inside that commit, also with other suites on the cores. Unpaced, in two
    // fresh-clone CI runs after the seals got faster, optimize waited only 0.7 and 2.0 s
    // (no merge was commit-ready as a turn ended), so the bound was not under test.
    const load = new Load(writer, { rowsPerGeneration: 500, keySpan: 20_000, pauseMs: 50 });
    load.start();
    // Two optimize turns, a continue-as-new, and an optimize turn that got in only by
    // promotion (it waited maxTurnWaitSecs): how soon a run reaches its event bound depends
    // on how many signals the writers' seals coalesce into, and beside the heaviest suites
    // a preparation can miss the other shard's commit (turns of 12 s were seen), so that a
    // turn ends with no merge ready and optimize gets in early (2.6 s): all are waited for.
    const firstRun = await eventually(async () => (await handle.describe()).runId, 'the first run', 10_000, 100);
    await eventually(
      async () => {
        const c = (await slow.tables.status(table)).counters;
        return c.turns.optimize >= 2 && c.maxTurnWaitSecs.optimize >= 3 && (await handle.describe()).runId !== firstRun;
      },
      'two optimize turns, one of them by promotion, and a continue-as-new',
      150_000,
      500,
    );
    await load.stop();
    await expectExact(table, load, slow);

    const status = await slow.tables.status(table);
    // Waits are counted across runs (carried over), so the longest turn is taken over every run.
    const chain = await chainHistories(slow.client, handle.workflowId);
    const runs = chain.flatMap((h) => activityRunsOf(h));
    const longestSecs = longestTurnMs(runs) / 1000;
    const waited = status.counters.maxTurnWaitSecs.optimize;
    console.log(`hot merger: merge turns ${status.counters.turns.merge}, optimize turns ${status.counters.turns.optimize}, optimize max wait ${waited} s, merge max wait ${status.counters.maxTurnWaitSecs.merge} s, longest turn ${longestSecs} s`);
    // Runs really continued as new, each near the default bound of 500 events (what
    // arrives while a run drains comes on top).
    const chainLengths = chain.map((h) => h.events?.length ?? 0);
    console.log(`hot merger: run lengths ${chainLengths.join(', ')}`);
    expect(chain.length).toBeGreaterThan(1);
    expect(Math.max(...chainLengths)).toBeLessThanOrEqual(700);
    // The merger really was hot: optimize got in only by promotion ...
    expect(waited).toBeGreaterThanOrEqual(3);
    // ... and no later than the bound. Both sides are on the workflow clock; status
    // rounds to milliseconds and history timestamps are truncated to them (the 2 ms).
    // A continue-as-new between the end of the turn and the grant adds the time until the
    // new run's first workflow task, and when a signal came during the old run's last task
    // (Temporal then refuses the continue-as-new) a replay of the old run first: ~0.6 s at
    // 500 events on a quiet machine, 3 s and more beside the heaviest suites. That gap is
    // the server's and the worker's, not the policy's, so it is measured from the chain
    // and added; it still has a bound of its own.
    const gap = continueAsNewGaps(chain).reduce((a, g) => (g.ms > a.ms ? g : a), { ms: 0, events: [] as string[] });
    const canGapSecs = gap.ms / 1000;
    console.log(`hot merger: longest continue-as-new gap ${canGapSecs} s`);
    // Once, beside the heaviest suites in CI, a gap took 32 s: about a workflow task
    // waiting out a sticky queue (STICKY_QUEUE_TIMEOUT_SECS) and 2 s more, though that
    // run's history was not kept. A longer one is shown with its events.
    expect(canGapSecs, `the events of that gap:\n${gap.events.slice(0, 80).join('\n')}`).toBeLessThanOrEqual(STICKY_QUEUE_TIMEOUT_SECS + 15);
    expect(waited).toBeLessThanOrEqual(3 + longestSecs + canGapSecs + 0.002);
    await recordHistory(slow.client, handle, 'hot-merger');
  } finally {
    await slow.close();
  }
  // Above the suite's 120 s: the wait for the optimize turns alone may take 150 s, and
  // beside the other suites the whole test took 67-100 s in CI runs.
}, 300_000);

test('bump of optimize to class 1 makes it the very next turn', async () => {
  // Short runs: the plan and the turn it gets may fall in different runs of the chain
  // (CI once lost the plan reading only the latest run); the bump must hold across them.
  // Merges stay out of class 1: short runs slow merging, and both a backlog over
  // softBacklog and a merge waiting maxTurnWaitSecs would put merges in class 1 too,
  // where an older ready merge or a promoted one goes first (invariants 3 and 4).
  const { table, writer, handle } = await newTable(
    'bump',
    { ...QUIET, periodSecs: { optimize: 0, index: 0, gc: 0 }, softBacklog: 100_000, hardBacklog: 200_000, maxTurnWaitSecs: { merge: 3600 } },
    { continueAsNewAtEvents: 80 },
  );
  const load = new Load(writer, { rowsPerGeneration: 200, keySpan: 5000, pauseMs: 20 });
  load.start();
  await eventually(async () => (await h.tables.status(table)).counters.turns.merge >= 5, 'merges under way', 60_000);
  await h.tables.bump(table, { kind: 'optimize', class: 1, reason: 'integration test' });
  await eventually(async () => (await h.tables.status(table)).counters.turns.optimize >= 1, 'the optimize turn', 60_000);
  await load.stop();

  const runs = await activityRuns(handle);
  const planned = runs.find((r) => r.type === 'planOptimize' && r.outcome === 'completed')!;
  expect(planned).toBeDefined();
  // The first turn granted after optimize became commit-ready is optimize's.
  const next = runs.find((r) => isCommit(r) && r.scheduledEventId > planned.closedEventId!);
  expect(next?.type).toBe('commitOptimize');
  await expectExact(table, load);
  expect((await chainHistories(h.client, handle.workflowId)).length).toBeGreaterThan(1);
  await recordHistory(h.client, handle, 'bump');
});

test('pause --kind merge holds merges with a visible reason while optimize goes on; resume loses nothing', async () => {
  const { table, writer, handle } = await newTable('pause', { ...QUIET, periodSecs: { optimize: 0, index: 0, gc: 0 } });
  const load = new Load(writer, { rowsPerGeneration: 100, keySpan: 2000, pauseMs: 0 });
  // One shard merged before the other is written: two commits, two small fragments, so
  // the optimize bumped below has something to compact (one commit of both shards would
  // leave it nothing to do, and no turn to take).
  for (const s of ['s0', 's1']) {
    for (let i = 0; i < 2; i++) await load.writeOne(s);
    await new MergeWaiter(h.client).wait(table, s, 2);
  }

  await h.tables.pause(table, { kind: 'merge' });
  await eventually(async () => (await h.tables.status(table)).pausedKinds.includes('merge'), 'pause applied');
  for (let i = 0; i < 3; i++) for (const s of ['s0', 's1']) await load.writeOne(s);
  const held = await eventually(async () => {
    const s = await h.tables.status(table);
    return s.backlog === 6 && s.queue.filter((q) => q.kind === 'merge').length === 2 ? s : null;
  }, 'merges queued while paused');
  for (const q of held.queue.filter((q) => q.kind === 'merge')) expect(q.reason).toMatch(/paused by operator/);
  expect(held.shards.map((s) => s.mergedThroughSeq)).toEqual([2, 2]);

  // Another kind still takes turns while merges are paused.
  await h.tables.bump(table, { kind: 'optimize', class: 1, reason: 'other kinds go on' });
  await eventually(async () => (await h.tables.status(table)).counters.turns.optimize >= 1, 'optimize while merge paused').catch(async (e) => {
    console.log('status when optimize never took a turn:', JSON.stringify(await h.tables.status(table)).slice(0, 4000));
    throw e;
  });
  expect((await h.tables.status(table)).shards.map((s) => s.mergedThroughSeq)).toEqual([2, 2]);

  await h.tables.resume(table, { kind: 'merge' });
  await expectExact(table, load);
  expect((await h.tables.status(table)).pausedKinds).toEqual([]);
  await recordHistory(h.client, handle, 'pause-resume');
});

test('continue-as-new forced mid-load keeps watermarks, queue and counters; nothing lost', async () => {
  const { table, writer, handle } = await newTable('can', { ...QUIET, periodSecs: { optimize: 5, index: 0, gc: 0 } }, { continueAsNewAtEvents: 120 });
  const firstRunId = (await handle.describe()).runId;
  const load = new Load(writer, { rowsPerGeneration: 100, keySpan: 3000, pauseMs: 30 });
  load.start();
  // Every merge-turn count the poll saw, in order: checked after the wait, so a counter
  // that went backwards even once across runs fails the test.
  const turnsSeen: number[] = [];
  await eventually(async () => {
    const turns = (await h.tables.status(table)).counters.turns.merge;
    turnsSeen.push(turns);
    const d = await handle.describe();
    return d.runId !== firstRunId && turns >= 20 ? true : null;
  }, 'a continue-as-new and 20 merge turns', 90_000, 300);
  await load.stop();
  expect(turnsSeen.filter((n, i) => i > 0 && n < turnsSeen[i - 1]!)).toEqual([]);
  await expectExact(table, load);
  const status = await h.tables.status(table);
  expect(status.counters.merges).toBeGreaterThanOrEqual(turnsSeen.at(-1)!);
  expect(status.shards.map((s) => s.sealedThroughSeq)).toEqual([load.sealedThrough('s0'), load.sealedThrough('s1')]);
  await recordHistory(h.client, handle, 'continue-as-new');
});

test('bad input is refused with one line and the workflow keeps running', async () => {
  const { table, handle } = await newTable('bad', QUIET);
  // Client-side validation: nothing is sent.
  await expect(h.tables.bump(table, { kind: 'compact' as never, reason: 'x' })).rejects.toThrow(/^bump: kind: must be one of merge, optimize, index, gc$/);
  // Sent anyway, raw: the workflow ignores it instead of failing its task.
  await handle.signal(msg.bump, { kind: 'compact' as never, reason: 'x' });
  // Update validators reject before anything is written to history.
  const err1 = await handle.executeUpdate(msg.awaitMerged, { args: [{ shard: 's0', seq: -1 }] }).catch((e: Error & { cause?: Error }) => e.cause?.message ?? e.message);
  expect(err1).toMatch(/^awaitMerged: seq: must be an integer >= 0$/);
  const err2 = await h.tables.setPolicy(table, { bogus: 1 } as never).catch((e: Error & { cause?: Error }) => e.cause?.message ?? e.message);
  expect(err2).toBe('bogus: unknown key');
  const err3 = await h.tables.setPolicy(table, { maxTurnWaitSecs: { optimize: -5 } }).catch((e: Error & { cause?: Error }) => e.cause?.message ?? e.message);
  expect(err3).toBe('maxTurnWaitSecs.optimize: must be an integer in [1, 86400]');

  // Still running and still answering; a valid policy change still applies.
  expect((await handle.describe()).status.name).toBe('RUNNING');
  const p = await h.tables.setPolicy(table, { maxTurnWaitSecs: { optimize: 7 } });
  expect(p.maxTurnWaitSecs.optimize).toBe(7);
  const s = await h.tables.status(table);
  expect(s.table).toBe(table);
  await recordHistory(h.client, handle, 'bad-input');
});

test('a generation whose demand signal was lost is found by the periodic snapshot and merged', async () => {
  const { table, writer, handle } = await newTable('snap', { ...QUIET, snapshotIntervalSecs: 1 });
  const load = new Load(writer, { rowsPerGeneration: 100, keySpan: 1000, pauseMs: 0 });
  await load.writeOne('s0');
  // Seal behind the workflow's back: no demand signal at all.
  const rows = generateRows({ keys: [0, 999], count: 100, shard: 's0', shards: ['s0', 's1'], seed: 99 });
  const sealed = await sealGeneration(h.dataRoot, table, 's0', rows);
  load.written.get('s0')!.push({ seq: sealed.seq, rows });
  const r = await new MergeWaiter(h.client).wait(table, 's0', sealed.seq);
  expect(r.mergedThroughSeq).toBe(2);
  await expectExact(table, load);
  await recordHistory(h.client, handle, 'snapshot-recovery');
});

test('a writer follows the backlog the table publishes (describe), and queries the workflow for its limits only while they can act', async () => {
  const { table, writer } = await newTable('published', { ...QUIET, softBacklog: 0, hardBacklog: 10, maxWriteDelayMs: 1000 });
  await h.tables.pause(table, { kind: 'merge' });
  await eventually(async () => (await h.tables.status(table)).pausedKinds.includes('merge'), 'pause applied');
  expect((await writer.refreshPressure())?.hardBacklog).toBe(10);
  const queries = vi.spyOn(h.tables, 'state');
  try {
    const load = new Load(writer, { rowsPerGeneration: 50, keySpan: 500, pauseMs: 0 });
    for (let backlog = 1; backlog <= 3; backlog++) {
      await load.writeOne('s0');
      // Published by the table (at most a second after it changed), then read by the writer.
      const known = await eventually(async () => {
        const p = await writer.refreshInBackground();
        return p?.backlog === backlog ? p : null;
      }, `writer knows backlog ${backlog}`, 10_000);
      expect(known).toEqual({ backlog, writePressure: backlog / 10, hardBacklog: 10, maxWriteDelayMs: 1000 });
    }
    // The seal acts on it: it waits pressure 0.3 x 1,000 ms first.
    const before = Date.now();
    await load.writeOne('s0');
    expect(Date.now() - before).toBeGreaterThanOrEqual(300);
    // Every read since the first query was a describe: the limits are asked for every 30 s.
    expect(queries).not.toHaveBeenCalled();
    // 31 s later, with the pressure above 0, the limits are asked for once more.
    const realNow = Date.now;
    const clock = vi.spyOn(Date, 'now').mockImplementation(() => realNow() + 31_000);
    try {
      await eventually(async () => (await writer.refreshInBackground())?.writePressure === 0.4, 'writer knows pressure 0.4');
      expect(queries).toHaveBeenCalledTimes(1);
      await h.tables.resume(table, { kind: 'merge' });
      await expectExact(table, load);
      await eventually(async () => (await writer.refreshInBackground())?.writePressure === 0, 'writer knows pressure 0');
      // At pressure 0 the limits cannot act (no delay, backlog below hardBacklog): however
      // old they are, reads stay describes.
      clock.mockImplementation(() => realNow() + 62_000);
      queries.mockClear(); // the test's own status reads above went through it too
      expect((await writer.refreshInBackground())?.writePressure).toBe(0);
      expect(queries).not.toHaveBeenCalled();
    } finally {
      clock.mockRestore();
    }
  } finally {
    queries.mockRestore();
  }
});

test("a writer's first seal asks no worker while the table publishes pressure 0", async () => {
  const { table, writer } = await newTable('first-read', { ...QUIET, softBacklog: 0, hardBacklog: 10, maxWriteDelayMs: 1000 });
  await eventually(async () => (await h.tables.publishedPressure(table)) !== null, 'the table published its pressure');
  const queries = vi.spyOn(h.tables, 'state');
  try {
    const seq = await new Load(writer, { rowsPerGeneration: 50, keySpan: 500, pauseMs: 0 }).writeOne('s0');
    expect(queries).not.toHaveBeenCalled();
    // s0 merged first: its backlog, published while its commit ran, would otherwise pass for
    // the paused s1's below and then fall back to 0.
    await eventually(async () => (await h.tables.status(table)).shards.find((x) => x.shard === 's0')!.mergedThroughSeq >= seq, 's0 merged');
    await eventually(async () => (await h.tables.publishedPressure(table))?.writePressure === 0, 'pressure 0 published again');
    await h.tables.pause(table, { kind: 'merge' });
    await eventually(async () => (await h.tables.status(table)).pausedKinds.includes('merge'), 'pause applied');
    await new Load(writer, { rowsPerGeneration: 50, keySpan: 500, pauseMs: 0 }).writeOne('s1');
    await eventually(async () => ((await h.tables.publishedPressure(table))?.writePressure ?? 0) > 0, 'pressure above 0 published');
    queries.mockClear(); // the status reads above went through it
    // Above 0 the limits act, so a new writer asks for them before its first seal.
    const second = await TableWriter.open(h.tables, h.dataRoot, table);
    await new Load(second, { rowsPerGeneration: 50, keySpan: 500, pauseMs: 0 }).writeOne('s1');
    expect(queries).toHaveBeenCalledTimes(1);
    expect(await second.refreshInBackground()).toMatchObject({ hardBacklog: 10, maxWriteDelayMs: 1000 });
  } finally {
    queries.mockRestore();
    await h.tables.resume(table, { kind: 'merge' });
  }
});

test('writers are slowed smoothly by write pressure and refused at hardBacklog; nothing is lost', async () => {
  const { table, writer, handle } = await newTable('pressure', { ...QUIET, softBacklog: 2, hardBacklog: 6, maxWriteDelayMs: 400 });
  await h.tables.pause(table, { kind: 'merge' });
  await eventually(async () => (await h.tables.status(table)).pausedKinds.includes('merge'), 'pause applied');
  const load = new Load(writer, { rowsPerGeneration: 50, keySpan: 500, pauseMs: 0 });
  const delays: number[] = [];
  for (let backlog = 0; backlog < 6; backlog++) {
    await eventually(async () => (await h.tables.status(table)).backlog === backlog, `backlog ${backlog}`);
    await writer.refreshPressure();
    const before = Date.now();
    await load.writeOne('s0');
    delays.push(Date.now() - before);
  }
  // 0 at or below softBacklog, then rising linearly: 100, 200, 300 ms at backlog 3, 4, 5.
  console.log(`seal times by backlog 0..5: ${delays.join(', ')} ms`);
  for (const [backlog, ms] of delays.entries()) expect(ms).toBeGreaterThanOrEqual(Math.max(0, backlog - 2) * 100);
  await eventually(async () => (await h.tables.status(table)).backlog === 6, 'backlog 6');
  await writer.refreshPressure();
  await expect(load.writeOne('s0')).rejects.toThrow(`table ${table}: backlog 6 has reached hardBacklog 6; retry later`);
  await h.tables.resume(table, { kind: 'merge' });
  await expectExact(table, load);
  expect(load.sealedThrough('s0')).toBe(6);
  await recordHistory(h.client, handle, 'write-pressure');
});

test('workers scale horizontally: stopping one of two workers mid-load loses nothing', async () => {
  const second = await h.addWorker();
  // An activity task handed to the stopping worker's last poll can be lost without a
  // report (seen once in CI: merges stood still for 60 s, the default stallSecs.commit).
  // The heartbeat timeout is what recovers such a task, so it is kept short here.
  const { table, writer, handle } = await newTable('scale', { ...QUIET, stallSecs: { read: 10, encode: 10, commit: 10 } });
  const load = new Load(writer, { rowsPerGeneration: 300, keySpan: 3000, pauseMs: 10 });
  load.start();
  await eventually(async () => (await h.tables.status(table)).counters.turns.merge >= 5, 'merges on two workers');
  // Its running activities are cancelled; Temporal retries them on the other worker.
  await h.stopWorker(second);
  const stoppedAt = Date.now();
  await eventually(async () => (await h.tables.status(table)).counters.turns.merge >= 12, 'merges on the remaining worker', 120_000);
  const recoveredSecs = (Date.now() - stoppedAt) / 1000;
  await load.stop();
  await expectExact(table, load);
  // What the stop cost: activities that failed, timed out or needed another attempt.
  const hit = (await activityRuns(handle)).filter((r) => r.outcome !== 'completed' || r.previousAttempt !== null);
  const desc = hit.map((r) => `${r.activityId}: ${r.outcome}${r.previousAttempt ? ` after a ${r.previousAttempt}` : ''}, closed ${((r.closedAtMs! - stoppedAt) / 1000).toFixed(1)} s after the stop`);
  console.log(`worker stopped: 12 merge turns ${recoveredSecs.toFixed(1)} s after the stop; ${desc.join('; ') || 'no activity was hit'}`);
  await recordHistory(h.client, handle, 'worker-stopped');
});

for (const cut of ['commitMerge', 'prepareMerge'] as const) {
  test(`a worker stopped while its ${cut} outlasts the shutdown grace hands the unit over at once, not after stallSecs`, async () => {
    // Worker A's ${cut} never ends by itself (frozen until cancelled; a fixed 8 s freeze
    // could run out first on a loaded machine); its shutdown grace is 2 s; a silent loss
    // would only be noticed after stallSecs = 120 s.
    const phase = cut === 'commitMerge' ? 'commit' : 'read';
    const slow = await startHarness({
      name: 'graceful',
      deps: { faults: { freezeProgress: (p) => (p.activity === cut && p.phase === phase && p.attempt === 1 ? new Promise<void>(() => {}) : undefined) } },
    });
    try {
      // directMergeMaxBytes 0: the one small generation gets its preparation activity.
      const { table, writer, handle } = await newTable('graceful', { ...QUIET, stallSecs: { read: 120, encode: 120, commit: 120 }, commitRetryBaseSecs: 1, directMergeMaxBytes: 0 }, {}, slow);
      const load = new Load(writer, { rowsPerGeneration: 100, keySpan: 1000, pauseMs: 0 });
      await load.writeOne('s0');
      // Started on A (the only worker so far), not merely scheduled: B must not get it.
      const busy = async () =>
        (await handle.describe()).raw.pendingActivities?.some(
          (p) => p.activityId?.startsWith(`${cut === 'commitMerge' ? 'commit' : 'prepare'} merge/s0 `) && p.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED,
        );
      await eventually(busy, `${cut} running on worker A`);
      const a = slow.workers[0]!;
      await slow.addWorker({ faults: {} });
      const stoppedAt = Date.now();
      await slow.stopWorker(a);
      await load.writeOne('s1');
      await expectExact(table, load, slow);
      const first = (await activityRuns(handle)).find((r) => r.type === cut)!;
      console.log(`${cut} cut by worker shutdown: ${first.outcome} ${((first.closedAtMs! - stoppedAt) / 1000).toFixed(2)} s after the stop`);
      if (cut === 'commitMerge') {
        // Reported as failed by the stopping worker: the turn came back at once.
        expect(first.outcome).toBe('failed');
      } else {
        // Temporal retried it on the other worker (attempt 2) because attempt 1 was
        // reported as failed, not because its heartbeat timed out.
        expect(first.outcome).toBe('completed');
        expect(first.result).toMatchObject({ attempt: 2 });
        expect(first.previousAttempt).toBe('failure');
      }
      await recordHistory(slow.client, handle, `worker-shutdown-mid-${cut}`);
    } finally {
      await slow.close();
    }
  });
}

test('40 concurrent read-your-merges waits in one process share at most one update per shard', async () => {
  const { table, writer, handle } = await newTable('waits', QUIET);
  await h.tables.pause(table, { kind: 'merge' });
  const load = new Load(writer, { rowsPerGeneration: 50, keySpan: 500, pauseMs: 0 });
  for (let i = 0; i < 20; i++) for (const s of ['s0', 's1']) await load.writeOne(s);
  // Temporal refuses an 11th update in flight on one workflow; coalescing keeps it at 2.
  const waiter = new MergeWaiter(h.client);
  const waits = Array.from({ length: 40 }, (_, i) => waiter.wait(table, i % 2 ? 's1' : 's0', 1 + Math.floor(i / 2)));
  // Both coalesced updates are admitted (in history) while merges are still paused.
  await eventually(async () => (await historyEvents(handle, 'WORKFLOW_EXECUTION_UPDATE_ACCEPTED')).length === 2, 'two awaitMerged updates accepted');
  await h.tables.resume(table, { kind: 'merge' });
  const results = await Promise.all(waits);
  expect(waiter.maxInFlight).toBe(2);
  for (const [i, r] of results.entries()) {
    expect(r.merged).toBe(true);
    expect(r.seq).toBe(1 + Math.floor(i / 2));
    expect(r.mergedThroughSeq).toBeGreaterThanOrEqual(r.seq);
  }
  await expectExact(table, load);
});
