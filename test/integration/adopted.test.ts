import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, onTestFailed, test } from 'vitest';
import type { CommitAdoptedResult } from '../../activities/adopted';
import type { ShadowReport } from '../../src/cli/shadow-report';
import { sleep } from '../../src/util/sleep';
import { STICKY_QUEUE_TIMEOUT_SECS } from '../../src/worker/create-worker';
import { eventually, startHarness, STORAGES, uniqueName, type Harness, type StorageKind } from '../support/harness';
// @ts-expect-error: a plain-Node script without types
import { ON_FAILURE } from '../../scripts/test-lanes.mjs';
import { activityRuns, ms, type ActivityRun } from '../support/history';
import { startWorkerProcess, startWriters, TableWatcher, turnstile, type WorkerProcess, type Writers } from '../support/adopted-run';
import { createOutsideTable, KEY, openOutsideTable, verifyAgainstModels } from '../support/outside-table';

// An adopted table end to end, against outside writers that never stop: Lance tables
// that other processes write directly (mergeInsert batches, here 3 writer processes of
// fixtures/outside-writer.ts), maintained by a real `turnstile worker` process.
//   shadow: Turnstile decides and records compactions and commits nothing;
//   active: its compactions keep the fragment count bounded while the writers go on;
//   a worker SIGKILLed inside a compacting commit (optimize, or gc, which Lance prunes
//   through optimize): another worker carries on;
//   after it all, no outside write was lost or doubled, and no version younger than the
//   retention was pruned.
// On both storage backends (S3: the run's SeaweedFS, the table under a fresh prefix).

const PendingActivityState = temporal.api.enums.v1.PendingActivityState;

const INITIAL_ROWS = 3000;
/** Per writer: 2 batches a second of 50 rows, a fifth of them updates of the writer's own earlier keys. */
const LOAD: Record<StorageKind, { writers: number; batch: number; updateShare: number; rate: number }> = {
  fs: { writers: 3, batch: 50, updateShare: 0.2, rate: 2 },
  // On S3 with other suites on the cores a compaction takes ~10 s, and an outside update
  // committed meanwhile preempts it: at 1.2 updates a second it lost every race (a known
  // limit, docs/operations.md "Adopted tables"). Fewer updates keep the test about the
  // mechanics on S3: about one update per attempt, eight attempts per commit.
  s3: { writers: 2, batch: 50, updateShare: 0.05, rate: 1 },
};
/**
 * Quick enough for a test: looked at every second, compaction at most every 2 s once 16
 * small fragments are there, versions older than 30 s pruned once 5 are. A worker killed
 * inside a commit is found stalled after 10 s without a heartbeat.
 */
const POLICY = {
  snapshotIntervalSecs: 1,
  periodSecs: { optimize: 2, index: 10, gc: 5 },
  compactAtSmallFragments: 16,
  retentionSecs: 30,
  pruneAtVersions: 5,
  stallSecs: { read: 30, encode: 30, commit: 10 },
};
const SHADOW_SECS = 20;
/** Active mode before the kill: the first compaction must come within it. */
const ACTIVE_SECS = 45;
/** Looks at the fragments once the first compaction's effect is in (settledFrom below). */
const SETTLED_SECS = 20;
/**
 * What a compaction's turn may take beyond its period and the look before it: the commit
 * itself, and its retries after races lost to the writers (up to conflictRetries of them,
 * each after a random wait of at most conflictBackoffMaxSecs).
 */
const COMMIT_SLACK_SECS = 10;
const OPTIMIZE_COMMIT = 'commit optimize';
/**
 * The commits a kill may cut: both run Lance's optimize. Where gc's compaction keeps the
 * fragments under compactAtSmallFragments (S3, fewer writers) optimize commits are rare.
 */
const COMPACTING_COMMITS = [OPTIMIZE_COMMIT, 'commit gc'];
/**
 * From a kill to the next compacting commit closed on the new worker: the table's next
 * workflow task (a timer's, within a second of the kill, while the server still counts the
 * dead worker as polling) waits out the dead worker's sticky queue, the killed commit's
 * heartbeat timeout (stallSecs.commit) has passed by then, then the backoff and the commit.
 */
const RESUME_SECS = STICKY_QUEUE_TIMEOUT_SECS + 60;
/**
 * Once the writers stop, the commit that lost its races to them wins the next one: it
 * waits out its unit's backoff (commitRetryMaxSecs at most) and compacts the kill's backlog.
 */
const SETTLE_SECS = 90;

/** The adopted commits of one kind (activity id "commit optimize", ...) in scheduling order. */
const commitRuns = async (handle: WorkflowHandle, activityId = OPTIMIZE_COMMIT): Promise<ActivityRun[]> =>
  (await activityRuns(handle)).filter((r) => r.type === 'commitAdopted' && r.activityId === activityId);

/** The compacting commits (optimize and gc) in scheduling order. */
const compactingRuns = async (handle: WorkflowHandle): Promise<ActivityRun[]> =>
  (await activityRuns(handle)).filter((r) => r.type === 'commitAdopted' && COMPACTING_COMMITS.includes(r.activityId));

const result = (r: ActivityRun): CommitAdoptedResult => r.result as CommitAdoptedResult;

/**
 * The table's versions. listVersions reads every manifest it listed, and a gc commit of
 * the still-running worker may prune an old one in between ("not found"): then it lists
 * again. What was pruned meanwhile was older than the retention, so the check is the same.
 */
async function listVersionsSettled(t: { listVersions: () => Promise<{ version: number }[]> }): Promise<{ version: number }[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await t.listVersions();
    } catch (e) {
      if (attempt >= 5 || !/not found/i.test(String(e))) throw e;
      await sleep(500);
    }
  }
}

interface Victim {
  identity: string;
  killedAtMs: number;
  /** The killed commit's activity id: "commit optimize" or "commit gc". */
  activityId: string;
  /** When the killed commit was scheduled: which run of its activity id in the history it is. */
  scheduledAtMs: number;
}

/**
 * Waits for one of the table's compacting commits to be running on `worker` and SIGKILLs it there.
 * Null when none started within the wait (the caller tries again).
 */
async function killInsideCompaction(handle: WorkflowHandle, worker: WorkerProcess): Promise<Victim | null> {
  const found = await eventually(
    async () => {
      const d = await handle.describe();
      return (d.raw.pendingActivities ?? []).find(
        (p) => COMPACTING_COMMITS.includes(p.activityId ?? '') && p.state === PendingActivityState.PENDING_ACTIVITY_STATE_STARTED && p.lastWorkerIdentity === worker.identity,
      );
    },
    'a compacting commit running on the worker process',
    60_000,
    10,
  ).catch(() => null);
  if (!found) return null;
  const killedAtMs = Date.now();
  expect(await worker.kill()).toBe('SIGKILL');
  return { identity: worker.identity, killedAtMs, activityId: found.activityId!, scheduledAtMs: ms(found.scheduledTime) };
}

/** What the table's commits and queue were doing since `sinceMs` (`since`): for a wait that timed out. */
async function diagnose(h: Harness, table: string, since: string, sinceMs: number): Promise<string> {
  const handle = h.tables.handle(table);
  const runs = (await activityRuns(handle)).filter((r) => r.type === 'commitAdopted' && r.scheduledAtMs >= sinceMs - 30_000);
  const at = (t: number | null) => (t === null ? '-' : `${((t - sinceMs) / 1000).toFixed(1)}`);
  const lines = runs.map(
    (r) => `  ${r.activityId} scheduled ${at(r.scheduledAtMs)} started ${at(r.startedAtMs)} closed ${at(r.closedAtMs)} ${r.outcome ?? 'open'} on ${r.startedBy ?? '-'}${r.failure ? `: ${r.failure}` : ''}`,
  );
  const d = await handle.describe();
  const pending = (d.raw.pendingActivities ?? []).map((p) => `  pending ${p.activityId} state ${p.state} attempt ${p.attempt} on ${p.lastWorkerIdentity ?? '-'} ${p.lastFailure?.message ?? ''}`);
  const s = await h.tables.state(table);
  return [`commits of table ${table} (seconds after ${since}):`, ...lines, ...pending, `turn ${JSON.stringify(s.turn)}`, `queue ${JSON.stringify(s.queue)}`, `counters ${JSON.stringify(s.counters)}`].join('\n');
}

describe.each(STORAGES)('on %s storage', (storage: StorageKind) => {
  let h: Harness;
  let local: string;
  beforeAll(async () => {
    // No worker in this process: every activity runs in the worker processes the test starts and kills.
    h = await startHarness({ name: 'adopted', storage, workers: 0 });
    local = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-adopted-'));
  });
  afterAll(async () => {
    await h?.close();
    if (local) fs.rmSync(local, { recursive: true, force: true });
  });

  test('shadow commits nothing; active keeps fragments bounded through a killed worker; no write lost, no young version pruned', async () => {
    const name = uniqueName('adopted');
    const lanceName = name.replace(/-/g, '_');
    const uri = storage === 'fs' ? path.join(local, `${lanceName}.lance`) : `${h.dataRoot}-outside/${lanceName}.lance`;
    const logDir = fs.mkdtempSync(path.join(local, 'logs-'));
    const t0 = Date.now();
    const notes: string[] = [];
    // Printed as it happens too: a run cut short by the timeout still shows how far it got.
    const note = (line: string) => {
      notes.push(line);
      console.log(`[adopted ${storage} +${((Date.now() - t0) / 1000).toFixed(0)} s] ${line}`);
    };
    // The phases' notes again beside the failure, where the suite's end repeats it.
    onTestFailed(() => console.log(notes.map((n) => `${ON_FAILURE}adopted ${storage}: ${n}`).join('\n')));

    await createOutsideTable(uri, INITIAL_ROWS);

    let worker = await startWorkerProcess(h);
    const workers: WorkerProcess[] = [worker];
    let writers: Writers | null = null;
    const tbl = await openOutsideTable(uri);
    const watcher = new TableWatcher(tbl);
    const handle = h.tables.handle(name);
    try {
      writers = await startWriters({ uri, logDir, ...LOAD[storage] });
      writers.go();
      const shadowFromVersion = await tbl.version();
      watcher.start('shadow');

      // ---- shadow ----
      const policyFile = path.join(local, `${name}-policy.json`);
      fs.writeFileSync(policyFile, JSON.stringify(POLICY));
      expect(await turnstile(h, 'table', 'adopt', name, '--uri', uri, '--key', KEY, '--policy', policyFile)).toMatch(/shadow mode/);
      const shadowAt = Date.now();
      const report = async (): Promise<ShadowReport> => JSON.parse(await turnstile(h, 'shadow-report', name, '--json')) as ShadowReport;
      await sleep(SHADOW_SECS * 1000);
      // At least one compaction decided (the table passed 16 small fragments within seconds).
      await eventually(async () => ((await h.tables.state(name)).adoptedLog?.totals.optimize.decided ?? 0) > 0, 'an optimize decision in shadow mode', 60_000, 1000);
      const shadow = await report();
      expect(shadow.mode).toBe('shadow');
      expect(shadow.turnstile.perKind.optimize.decided).toBeGreaterThan(0);
      for (const kind of ['optimize', 'index', 'gc'] as const) expect(shadow.turnstile.perKind[kind].carriedOut, kind).toBe(0);
      const shadowDecisions = shadow.turnstile.recent.filter((d) => d.kind === 'optimize');
      expect(shadowDecisions.length).toBeGreaterThan(0);
      for (const d of shadowDecisions) expect(d.carriedOut).toBe(false);
      expect(shadow.table_.turnstileCommits).toBe(0);

      // Every version made in shadow mode is a writer's: each of their mergeInserts adds
      // rows (most of a batch is new keys), while a compaction or an index build keeps
      // the row count. Walked up to the latest version, then the switch follows at once.
      // The writers go on meanwhile, and on a loaded S3 a version's checkout can take
      // longer than they take to make one: three passes at most, the versions still
      // unwalked are counted (the scheduled commits below cover them too).
      // A handle of its own: the watcher's must stay at the latest version.
      const past = await openOutsideTable(uri);
      const rowsAt = async (v: number) => {
        await past.checkout(v);
        return past.countRows();
      };
      let walked = shadowFromVersion;
      let prevRows = await rowsAt(walked);
      const shrank: string[] = [];
      let latest = await tbl.version();
      for (let pass = 0; pass < 3 && walked < latest; pass++, latest = await tbl.version()) {
        for (let v = walked + 1; v <= latest; v++) {
          const rows = await rowsAt(v);
          if (rows <= prevRows) shrank.push(`v${v}: ${prevRows} -> ${rows}`);
          prevRows = rows;
        }
        walked = latest;
      }
      past.close();

      // ---- active ----
      // The mode changes while the command runs (its update), which under load takes
      // seconds: shadow mode until it started (modeCalledAt), active once it returned
      // (switchAt), either in between. Shadow mode schedules no commit activity, so every
      // commit scheduled after modeCalledAt is an active one.
      const compactingTurns = (s: { counters: { turns: { optimize: number; gc: number } } }) => s.counters.turns.optimize + s.counters.turns.gc;
      const turnsBefore = compactingTurns(await h.tables.status(name));
      const modeCalledAt = Date.now();
      expect(await turnstile(h, 'mode', name, 'active')).toMatch(/mode active/);
      const switchAt = Date.now();
      watcher.phase = 'active';

      expect(shrank, 'versions of shadow mode that added no rows').toEqual([]);
      const shadowSamples = watcher.between(0, modeCalledAt);
      const fell = shadowSamples.slice(1).filter((s, i) => s.fragments < shadowSamples[i]!.fragments);
      expect(fell, 'the fragment count fell in shadow mode').toEqual([]);
      const shadowCommits = (await activityRuns(handle)).filter((r) => r.type === 'commitAdopted' && r.scheduledAtMs < modeCalledAt);
      expect(shadowCommits, 'commits scheduled in shadow mode').toEqual([]);
      // Every version of the run until the switch is a writer's commit: their rate.
      const shadowSecs = (modeCalledAt - shadowAt) / 1000;
      const commitsPerSec = (walked - shadowFromVersion) / shadowSecs;
      note(
        `shadow ${shadowSecs.toFixed(0)} s: ${shadow.turnstile.perKind.optimize.decided} optimize decisions (none carried out), ${walked - shadowFromVersion} versions, all adding rows (${latest - walked} more not walked), ` +
          `writers ${commitsPerSec.toFixed(1)} commits/s, fragments ${shadowSamples[0]?.fragments}..${shadowSamples.at(-1)?.fragments}`,
      );

      // Soft from here on: a maintenance that does not keep up is reported, and the
      // kill, the writes and the versions are still checked.
      let stuck = '';
      // A compacting commit that `matches`, within `secs`; null when none came, and `stuck`
      // then says so with the table's commits since `since`.
      const compactingCommit = (matches: (r: ActivityRun) => boolean, what: string, secs: number, since: string, sinceMs: number) =>
        eventually(async () => (await compactingRuns(handle)).find(matches), what, secs * 1000, 1000).catch(async (e: Error) => {
          stuck = `${e.message}\n${await diagnose(h, name, since, sinceMs)}`;
          return null;
        });
      // gc prunes through Lance's optimize, which compacts first: whichever kind comes
      // first compacts the backlog, and a gc every few seconds can keep the small
      // fragments under compactAtSmallFragments so that optimize never needs to commit.
      const compacted = (r: ActivityRun) => r.outcome === 'completed' && r.scheduledAtMs >= modeCalledAt && result(r).fragmentsRemoved > result(r).fragmentsAdded;
      const firstCompaction = await compactingCommit(compacted, 'the first compacting commit in active mode', ACTIVE_SECS, 'the switch to active', switchAt);
      expect.soft(firstCompaction, stuck).not.toBeNull();
      // The fragments are bounded from a compaction's horizon after the first one on
      // (below): at least SETTLED_SECS of looks there, however late it came.
      const horizonSecs = POLICY.periodSecs.optimize + POLICY.snapshotIntervalSecs + COMMIT_SLACK_SECS;
      const settledFrom = (firstCompaction?.closedAtMs ?? switchAt) + horizonSecs * 1000;
      await sleep(Math.max(0, switchAt + ACTIVE_SECS * 1000 - Date.now(), firstCompaction ? settledFrom + SETTLED_SECS * 1000 - Date.now() : 0));
      const activeEnd = Date.now();
      const status = await h.tables.status(name);
      watcher.phase = 'kill';

      expect(status.adopted?.mode).toBe('active');
      const activeRuns = (await compactingRuns(handle)).filter((r) => r.scheduledAtMs >= modeCalledAt && r.closedAtMs !== null && r.closedAtMs <= activeEnd);
      const done = activeRuns.filter((r) => r.outcome === 'completed');
      const perKind = (runs: ActivityRun[]) => COMPACTING_COMMITS.map((id) => `${runs.filter((r) => r.activityId === id).length} ${id.replace('commit ', '')}`).join(' + ');
      const beforeSwitch = watcher.between(0, modeCalledAt).at(-1)!.fragments;
      const activeMin = Math.min(...watcher.between(modeCalledAt, activeEnd).map((s) => s.fragments));
      // Once the backlog of shadow mode is compacted, the writers add at most
      // writers * rate fragments a second (each mergeInsert adds one) and a
      // compaction comes at most periodSecs.optimize after the look that found 16 small
      // ones, itself at most snapshotIntervalSecs late, and takes up to COMMIT_SLACK_SECS:
      // at most that many seconds' fragments on top of the threshold, plus the compacted
      // fragments themselves: on fs 16 + 6/s * (2 + 1 + 10) s + 2 = 96.
      const bound = POLICY.compactAtSmallFragments + LOAD[storage].writers * LOAD[storage].rate * horizonSecs + 2;
      const settled = watcher.between(settledFrom, activeEnd);
      const activeMax = Math.max(...settled.map((s) => s.fragments));
      const conflicts = status.counters.commitConflicts;
      note(
        `mode command ${((switchAt - modeCalledAt) / 1000).toFixed(1)} s; active ${((activeEnd - switchAt) / 1000).toFixed(0)} s: fragments ${beforeSwitch} at the switch, ` +
          `first compaction ${firstCompaction ? `${((firstCompaction.closedAtMs! - modeCalledAt) / 1000).toFixed(1)} s after the command started` : 'never'}, ` +
          `then max ${activeMax} (bound ${bound}) min ${activeMin} over ${settled.length} looks; optimize + gc turns ${turnsBefore} -> ${compactingTurns(status)}, ` +
          `compacting commits ${perKind(done)} completed, ${activeRuns.length - done.length} failed; commitConflicts ${JSON.stringify(conflicts)}, ` +
          `conflicts per completed commit ${done.map((r) => result(r).conflicts).join(',')}`,
      );
      expect.soft(compactingTurns(status), 'optimize and gc turns in active mode').toBeGreaterThan(turnsBefore);
      expect.soft(done.length, 'compacting commits completed in active mode').toBeGreaterThan(0);
      expect.soft(done.some(compacted), 'a compacting commit that removed fragments').toBe(true);
      expect.soft(activeMin, 'the fragment count fell in active mode').toBeLessThan(beforeSwitch);
      expect.soft(settled.length, 'looks at the fragments after the first compaction').toBeGreaterThan(SETTLED_SECS / 2);
      expect.soft(activeMax, `fragments over the active phase after the first compaction (bound ${bound})`).toBeLessThanOrEqual(bound);
      expect.soft(typeof conflicts, 'status counters.commitConflicts').toBe('number');

      // ---- a worker killed inside a compacting commit ----
      // The kill can race the commit's own end; kill again until one was cut short (at most 4 workers).
      const killed: string[] = [];
      let cut: { victim: Victim; run: ActivityRun } | null = null;
      for (let i = 0; i < 4 && !cut; i++) {
        const victim = await killInsideCompaction(handle, worker);
        if (!victim) {
          // Nothing killed: the worker lives on. A second one beside it would take commits
          // the next round waits for on this one, and every later round would miss too.
          killed.push('no compacting commit started within 60 s');
          continue;
        }
        worker = await startWorkerProcess(h);
        workers.push(worker);
        // Its started event is written when it closes: until then the history does not name the worker.
        const run = await eventually(
          async () => {
            const runs = await commitRuns(handle, victim.activityId);
            const r = runs.reduce<ActivityRun | null>((best, x) => (best && Math.abs(best.scheduledAtMs - victim.scheduledAtMs) <= Math.abs(x.scheduledAtMs - victim.scheduledAtMs) ? best : x), null);
            return r?.closedEventId ? r : null;
          },
          'the killed commit closed',
          90_000,
          500,
        );
        killed.push(`${victim.activityId}: ${run.outcome} ${((run.closedAtMs! - victim.killedAtMs) / 1000).toFixed(1)} s after the kill (started by the victim: ${run.startedBy === victim.identity})`);
        if (run.outcome !== 'completed') cut = { victim, run };
      }
      note(`kills: ${killed.join('; ')}`);
      expect(cut, killed.join('; ')).not.toBeNull();
      // Either compacting kind carries on: both compact the kill's backlog first. Under load
      // on S3 a compaction of that backlog can lose every race to the writers' updates (the
      // limit in docs/operations.md, "Adopted tables"); it carried on all the same, and
      // must win once they stop (below).
      const onNewWorker = (r: ActivityRun) => r.startedBy === worker.identity && r.scheduledAtMs >= cut!.run.closedAtMs!;
      const lostRaces = (r: ActivityRun) => r.outcome === 'failed' && r.failureType === 'CommitConflict';
      const resumed = await compactingCommit(
        (r) => onNewWorker(r) && (r.outcome === 'completed' || lostRaces(r)),
        'a compacting commit on the new worker after the kill that completed or lost its races to the writers',
        RESUME_SECS,
        'the kill',
        cut!.victim.killedAtMs,
      );
      const killedAt = cut!.victim.killedAtMs;
      note(
        (resumed
          ? `after the ${cut!.victim.activityId} killed: the next ${resumed.activityId} was scheduled ${((resumed.scheduledAtMs - killedAt) / 1000).toFixed(1)} s, ` +
            `started ${((resumed.startedAtMs! - killedAt) / 1000).toFixed(1)} s, ${resumed.outcome === 'completed' ? 'completed' : `lost its races (${resumed.failure?.split(' (')[0]})`} ${((resumed.closedAtMs! - killedAt) / 1000).toFixed(1)} s after the kill; `
          : `after the ${cut!.victim.activityId} killed: no compacting commit closed on the new worker within ${RESUME_SECS} s; `) + `fragments max ${Math.max(...watcher.inPhase('kill').map((s) => s.fragments))} meanwhile`,
      );
      // Soft: whether or not it resumed, the writes and the versions are checked below.
      expect.soft(resumed, stuck).not.toBeNull();

      // ---- the writers stop; the table is what they wrote ----
      watcher.phase = 'stopping';
      const stopAt = Date.now();
      const stopped = await writers.stop();
      const writersErr = writers.stderr();
      writers = null;
      const models = stopped.map((w) => w.model);
      const pct = (v: number[], p: number) => [...v].sort((x, y) => x - y)[Math.max(0, Math.ceil((p / 100) * v.length) - 1)] ?? 0;
      note(
        `writers: ${stopped.map((w) => `${w.commits} commits, ${w.failures} failed attempts, ${w.lanceRetries} Lance retries, batch p50 ${pct(w.batchMs, 50)} ms p99 ${pct(w.batchMs, 99)} ms max ${Math.max(0, ...w.batchMs)} ms`).join('; ')}`,
      );
      for (const w of stopped.filter((x) => x.failures > 0)) note(`writer ${w.writer} failed: ${w.errors.slice(0, 5).join('; ')}`);
      // A panic inside lancedb: Rust's line on stderr.
      const panics = writersErr.split('\n').filter((l) => /panicked at/.test(l));
      if (panics.length > 0) note(`writers' panics: ${panics.slice(0, 3).join('; ')}`);
      // A writer whose batch never ended (SIGKILLed at the stop) kept a batch in flight.
      const hung = stopped.filter((w) => w.killed).map((w) => `writer ${w.writer}: batch ${w.inFlight?.seq} in flight ${((stopAt - (w.inFlight?.sinceMs ?? stopAt)) / 1000).toFixed(0)} s at the stop`);
      if (hung.length > 0) note(`hung: ${hung.join('; ')}`);
      expect.soft(hung, 'outside writers that did not end their batch').toEqual([]);
      const verified = await verifyAgainstModels(await openOutsideTable(uri), models, INITIAL_ROWS);
      note(`verify: ${JSON.stringify({ ...verified, examples: undefined })}`);
      expect(verified.examples).toEqual([]);
      expect(verified).toMatchObject({ duplicateKeys: 0, missing: 0, wrong: 0, extra: 0 });
      const fresh = await openOutsideTable(uri);
      expect(await fresh.countRows()).toBe(verified.rows);
      const lastKey = models[0]!.keyBase + models[0]!.seqs.length - 1;
      expect(await fresh.query().where(`${KEY} = ${lastKey}`).toArray()).toHaveLength(1);
      expect(await fresh.countRows(`${KEY} < ${INITIAL_ROWS}`)).toBe(INITIAL_ROWS);

      if (resumed && resumed.outcome !== 'completed') {
        const won = await compactingCommit(
          (r) => onNewWorker(r) && r.outcome === 'completed',
          'a compacting commit completed on the new worker once the writers stopped',
          SETTLE_SECS,
          'the kill',
          killedAt,
        );
        note(won ? `with the writers stopped, ${won.activityId} completed ${((won.closedAtMs! - stopAt) / 1000).toFixed(1)} s after the stop began` : `with the writers stopped, no compacting commit completed within ${SETTLE_SECS} s`);
        expect.soft(won, stuck).not.toBeNull();
      }

      const byKind = new Map<string, { completed: number; other: number; conflicts: number }>();
      for (const r of (await activityRuns(handle)).filter((x) => x.type === 'commitAdopted')) {
        const k = byKind.get(r.activityId) ?? { completed: 0, other: 0, conflicts: 0 };
        if (r.outcome === 'completed') {
          k.completed++;
          k.conflicts += result(r).conflicts;
        } else if (r.outcome) k.other++;
        byKind.set(r.activityId, k);
      }
      const end = await h.tables.status(name);
      note(`commits: ${JSON.stringify(Object.fromEntries(byKind))}; turns ${JSON.stringify(end.counters.turns)}, commitConflicts ${JSON.stringify(end.counters.commitConflicts)}`);
      // The counter has every race a commit lost: those of the commits that completed at least.
      const lostByCompleted = [...byKind.values()].reduce((n, k) => n + k.conflicts, 0);
      expect.soft(end.counters.commitConflicts ?? 0, 'status commitConflicts against the completed commits').toBeGreaterThanOrEqual(lostByCompleted);

      // ---- no version younger than the retention was pruned ----
      // The final check's time is taken after its listing: a version pruned before the
      // listing was pruned by then, so only versions older than the retention then may be.
      await watcher.stop();
      const listed = new Set((await listVersionsSettled(fresh)).map((v) => v.version));
      const finalAt = Date.now();
      const young = [...watcher.seen].filter(([, ts]) => finalAt - ts < POLICY.retentionSecs * 1000);
      const youngGone = young.filter(([v]) => !listed.has(v)).map(([v, ts]) => `v${v} (${((finalAt - ts) / 1000).toFixed(1)} s old)`);
      const pruned = [...watcher.seen.keys()].filter((v) => !listed.has(v)).length;
      note(`versions: ${watcher.listings} listings, ${watcher.seen.size} seen, ${pruned} pruned, ${listed.size} listed at the end, ${young.length} younger than ${POLICY.retentionSecs} s; ${watcher.errors.length} failed looks ${JSON.stringify([...new Set(watcher.errors.map((e) => e.slice(0, 160)))].slice(0, 3))}`);
      expect(youngGone, 'versions younger than retentionSecs that were pruned').toEqual([]);
      expect.soft(pruned, 'versions pruned over the run').toBeGreaterThan(0);
    } finally {
      console.log(`[adopted ${storage}] ${((Date.now() - t0) / 1000).toFixed(1)} s\n  ${notes.join('\n  ')}`);
      if (writers) {
        if (writers.stderr()) console.log(writers.stderr().slice(-4000));
        writers.kill();
      }
      await watcher.stop();
      for (const w of workers) await w.stop();
      await handle.terminate('test over').catch(() => undefined);
    }
  }, 600_000);
});
