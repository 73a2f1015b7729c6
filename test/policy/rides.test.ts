import { describe, expect, it } from 'vitest';
import { commits, Driver, prepares, quietTable } from './helpers';
import { BRIEF_COMMIT_MS } from '../../src/policy/brief-turn';
import { FIRST_RIDE_MAX_GENERATIONS, FIRST_RIDE_MAX_ROWS, FIRST_RIDE_MAX_VERSIONS } from '../../src/policy/rides';
import type { PolicyEvent } from '../../src/policy/types';

// optimize and gc riding a merge's turn (src/policy/rides.ts).

const PERIOD_SECS = 300;
const small = (shard: string, seq: number) => ({ type: 'demand' as const, shard, sealedThroughSeq: seq, revision: seq, bytes: 5000 });
const mergeCommitted = (version: number, maintained?: Extract<PolicyEvent, { type: 'committed' }>['maintained']): PolicyEvent => ({
  type: 'committed',
  unitId: 'merge/s0',
  version,
  rows: 10,
  attempts: 1,
  ...(maintained ? { maintained } : {}),
});

/**
 * A written table whose optimize and gc last committed in `lastMs` (undefined: never)
 * and fell due at t = 1,000 with something changed since: the next seal comes at 2,000.
 */
function dueTable(lastMs: number | undefined, overrides = {}): Driver {
  const d = new Driver(quietTable({ periodSecs: { optimize: PERIOD_SECS, index: 0, gc: PERIOD_SECS }, ...overrides }, ['s0']));
  d.state.version = 5;
  d.state.dueAtMs.optimize = 1000;
  d.state.dueAtMs.gc = 1000;
  d.state.periodic.optimize.done = 4;
  d.state.periodic.gc.done = -1;
  if (lastMs !== undefined) d.state.lastCommitMs = { optimize: lastMs, gc: lastMs };
  return d.at(2000);
}

describe('maintenance riding a merge', () => {
  it("optimize and gc that commit briefly go with the next merge's turn: no preparation, no turn of their own", () => {
    const d = dueTable(40);
    const ds = d.send(small('s0', 1));
    expect(prepares(ds)).toEqual([]);
    const [c] = commits(ds);
    expect(c?.unit.id).toBe('merge/s0');
    expect(c?.riders?.map((r) => [r.id, r.rider])).toEqual([['optimize', true], ['gc', true]]);
    expect(d.state.turn?.riders).toEqual(['optimize', 'gc']);

    d.at(2100).send(mergeCommitted(7, { optimize: { ms: 30, rows: 1000 }, gc: { ms: 5, rows: 3 } }));
    expect(d.state.units).toEqual([]);
    expect(d.state.turn).toBeNull();
    expect(d.state.dueAtMs.optimize).toBe(2100 + PERIOD_SECS * 1000);
    expect(d.state.dueAtMs.gc).toBe(2100 + PERIOD_SECS * 1000);
    // What optimize ran on includes the merge it rode: nothing new for it until the next commit.
    expect(d.state.periodic.optimize.done).toBe(7);
    expect(d.state.lastCommitMs).toEqual({ optimize: 30, gc: 5 });
  });

  it('a ride that failed or did not run: the kind waits a period, and then runs as a unit of its own', () => {
    const d = dueTable(40);
    d.send(small('s0', 1));
    d.at(2100).send(mergeCommitted(6, { optimize: { ms: 900, rows: 0, error: 'optimize: disk full' } }));
    expect(d.state.units).toEqual([]);
    expect(d.state.dueAtMs.optimize).toBe(2100 + PERIOD_SECS * 1000);
    // Both count as not brief: optimize failed, gc was not run by the worker.
    expect(d.state.lastCommitMs).toEqual({ optimize: BRIEF_COMMIT_MS, gc: BRIEF_COMMIT_MS });
    // The merge itself committed.
    expect(d.state.shards[0]!.mergedThroughSeq).toBe(1);
    const later = d.at(2100 + PERIOD_SECS * 1000).send(small('s0', 2));
    expect(prepares(later).map((p) => p.unit.id)).toEqual(['optimize', 'gc']);
    expect(commits(later)[0]?.riders).toBeUndefined();
  });

  it('a merge commit that fails drops its riders; they go with the retry', () => {
    const d = dueTable(40, { commitRetryBaseSecs: 1 });
    d.send(small('s0', 1));
    d.at(2100).send({ type: 'commitFailed', unitId: 'merge/s0', error: 'transient', retryable: true, stalled: false });
    expect(d.state.units.map((u) => [u.id, u.state])).toEqual([['merge/s0', 'backoff']]);
    const retry = d.at(3100).send({ type: 'timer' });
    expect(commits(retry).map((c) => [c.unit.id, c.riders?.map((r) => r.id)])).toEqual([['merge/s0', ['optimize', 'gc']]]);
  });

  it('a first run, never measured, rides on a table small enough for it; past that it runs as its own unit', () => {
    const fresh = dueTable(undefined);
    fresh.state.counters.rowsMerged = FIRST_RIDE_MAX_ROWS;
    const [c] = commits(fresh.send(small('s0', 1)));
    expect(c?.riders?.map((r) => r.id)).toEqual(['optimize', 'gc']);
    fresh.at(2100).send(mergeCommitted(7, { optimize: { ms: 30, rows: 1000 }, gc: { ms: 5, rows: 3 } }));
    expect(fresh.state.lastCommitMs).toEqual({ optimize: 30, gc: 5 });

    const manyRows = dueTable(undefined);
    manyRows.state.counters.rowsMerged = FIRST_RIDE_MAX_ROWS + 1;
    const rows = manyRows.send(small('s0', 1));
    expect(prepares(rows).map((p) => p.unit.id)).toEqual(['optimize']);
    expect(commits(rows)[0]?.riders?.map((r) => r.id)).toEqual(['gc']);

    const manyVersions = dueTable(undefined);
    manyVersions.state.version = FIRST_RIDE_MAX_VERSIONS + 1;
    manyVersions.state.periodic.optimize.done = FIRST_RIDE_MAX_VERSIONS;
    const versions = manyVersions.send(small('s0', 1));
    expect(prepares(versions).map((p) => p.unit.id)).toEqual(['optimize']);
    expect(commits(versions)[0]?.riders?.map((r) => r.id)).toEqual(['gc']);

    const manyGenerations = dueTable(undefined);
    manyGenerations.state.shards[0]!.mergedThroughSeq = FIRST_RIDE_MAX_GENERATIONS + 1;
    manyGenerations.state.shards[0]!.sealedThroughSeq = FIRST_RIDE_MAX_GENERATIONS + 1;
    const gens = manyGenerations.send(small('s0', FIRST_RIDE_MAX_GENERATIONS + 2));
    expect(prepares(gens).map((p) => p.unit.id)).toEqual(['gc']);
    expect(commits(gens)[0]?.riders?.map((r) => r.id)).toEqual(['optimize']);
  });

  it('runs as its own unit: slow last time, bumped, or no merge coming', () => {
    const slow = dueTable(1500);
    expect(prepares(slow.send(small('s0', 1))).map((p) => p.unit.id)).toEqual(['optimize', 'gc']);

    const bumped = dueTable(40);
    bumped.at(500).send({ type: 'bump', bump: { target: { kind: 'optimize' }, class: 2, reason: 'test', expiresAtMs: 1e9 } });
    bumped.state.units = []; // what the bump started is not the point here
    const ds = bumped.at(2000).send(small('s0', 1));
    expect(prepares(ds).map((p) => p.unit.id)).toEqual(['optimize']);
    expect(commits(ds)[0]?.riders?.map((r) => r.id)).toEqual(['gc']);

    // A quarter period past due (due-slack.ts), no merge having come.
    const quiet = dueTable(40);
    const slackOut = 1000 + (PERIOD_SECS * 1000) / 4;
    expect(quiet.send({ type: 'timer' })).toEqual([{ type: 'wakeAt', atMs: slackOut, reason: 'optimize due (every 300 s)', id: `optimize due (every 300 s)@${slackOut}` }]);
    expect(quiet.state.units).toEqual([]);
    expect(prepares(quiet.at(slackOut).send({ type: 'timer' })).map((p) => p.unit.id)).toEqual(['optimize', 'gc']);

    const paused = dueTable(40);
    paused.send({ type: 'pause', kind: 'merge' });
    expect(paused.state.units.map((u) => u.id).sort()).toEqual(['gc', 'optimize']);
  });

  it('falling due just after the seal that made it, it waits for the next seal and rides it', () => {
    const d = dueTable(40);
    d.send(small('s0', 1));
    d.at(2100).send(mergeCommitted(7, { optimize: { ms: 30, rows: 1000 }, gc: { ms: 5, rows: 3 } }));
    const due = 2100 + PERIOD_SECS * 1000;
    // Seals in between (not due: nothing rides), then the seal a period later commits
    // 100 ms after it: due by then, with no merge coming.
    d.at(100_000).send(small('s0', 2));
    d.at(100_100).send(mergeCommitted(8));
    d.at(due - 100).send(small('s0', 3));
    const ended = d.at(due + 100).send(mergeCommitted(9));
    expect(prepares(ended)).toEqual([]);
    expect(d.state.units).toEqual([]);
    // A writer sealing once a minute, a little late.
    const [c] = commits(d.at(due + 60_500).send(small('s0', 4)));
    expect(c?.riders?.map((r) => r.id)).toEqual(['optimize', 'gc']);
  });

  it('an optimize or gc paused by an operator does not ride', () => {
    const d = dueTable(40);
    d.at(500).send({ type: 'pause', kind: 'optimize' });
    const [c] = commits(d.at(2000).send(small('s0', 1)));
    expect(c?.riders?.map((r) => r.id)).toEqual(['gc']);
  });
});
