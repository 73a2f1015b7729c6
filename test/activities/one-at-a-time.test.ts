import { afterEach, describe, expect, it } from 'vitest';
import { OneAtATime } from '../../activities/one-at-a-time';
import type { FreezePoint } from '../../activities/deps';
import { makeFixture, sealMany, start, type Fixture } from './helpers';
import { MemoryLedger } from '../../src/worker/memory-ledger';
import { SMALL_BYTES } from '../../src/worker/reservation-sizes';
import type { AdmissionDeps } from '../../activities/deps';

const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));

/** A task that records when it starts and ends, and ends when `finish` is called. */
function task(log: string[], name: string) {
  let finish!: () => void;
  const done = new Promise<void>((r) => (finish = r));
  return {
    finish: () => finish(),
    fn: async () => {
      log.push(`${name} start`);
      await done;
      log.push(`${name} end`);
      return name;
    },
  };
}

describe('OneAtATime', () => {
  it('runs the work of one key in arrival order, one at a time; other keys do not wait', async () => {
    const gate = new OneAtATime();
    const log: string[] = [];
    const [a1, a2, a3, b1] = [task(log, 'a1'), task(log, 'a2'), task(log, 'a3'), task(log, 'b1')];
    const runs = [gate.run('a', { maxWaitMs: 60_000 }, a1.fn), gate.run('a', { maxWaitMs: 60_000 }, a2.fn), gate.run('a', { maxWaitMs: 60_000 }, a3.fn), gate.run('b', { maxWaitMs: 60_000 }, b1.fn)];
    await tick();
    expect(log).toEqual(['a1 start', 'b1 start']);
    a2.finish(); // finishing a queued one early changes nothing: it has not started
    a1.finish();
    await tick();
    expect(log).toEqual(['a1 start', 'b1 start', 'a1 end', 'a2 start', 'a2 end', 'a3 start']);
    a3.finish();
    b1.finish();
    expect(await Promise.all(runs)).toEqual(['a1', 'a2', 'a3', 'b1']);
    await tick();
    expect(gate.busyKeys).toBe(0);
  });

  it('a waiter goes ahead after maxWaitMs, and the next one waits for both', async () => {
    const gate = new OneAtATime();
    const log: string[] = [];
    const [a1, a2, a3] = [task(log, 'a1'), task(log, 'a2'), task(log, 'a3')];
    const r1 = gate.run('a', { maxWaitMs: 60_000 }, a1.fn);
    const r2 = gate.run('a', { maxWaitMs: 50 }, a2.fn);
    const r3 = gate.run('a', { maxWaitMs: 60_000 }, a3.fn);
    await tick(150);
    expect(log).toEqual(['a1 start', 'a2 start']);
    a2.finish();
    await tick();
    expect(log).toEqual(['a1 start', 'a2 start', 'a2 end']);
    a1.finish();
    await tick();
    expect(log.at(-1)).toBe('a3 start');
    a3.finish();
    await Promise.all([r1, r2, r3]);
  });

  it('a failure releases the key; a cancelled waiter stops waiting and never runs', async () => {
    const gate = new OneAtATime();
    const log: string[] = [];
    const a1 = task(log, 'a1');
    const r1 = gate.run('a', { maxWaitMs: 60_000 }, a1.fn);
    let cancel!: (e: Error) => void;
    const cancelled = new Promise<never>((_, reject) => (cancel = reject));
    const r2 = gate.run('a', { maxWaitMs: 60_000, cancelled }, async () => {
      log.push('a2 ran');
    });
    cancel(new Error('cancelled'));
    await expect(r2).rejects.toThrow('cancelled');
    const r3 = gate.run('a', { maxWaitMs: 60_000 }, async () => {
      throw new Error('boom');
    });
    const a4 = task(log, 'a4');
    const r4 = gate.run('a', { maxWaitMs: 60_000 }, a4.fn);
    a1.finish();
    await r1;
    await expect(r3).rejects.toThrow('boom');
    await tick();
    expect(log).toEqual(['a1 start', 'a1 end', 'a4 start']);
    a4.finish();
    await r4;
  });
});

const GiB = 2 ** 30;
/** A worker's admission over `ledger`, as src/worker/fleet-memory.ts wires it. */
const admissionOf = (ledger: MemoryLedger): AdmissionDeps => ({
  reserve: (id, bytes, what, own) => ledger.reserve(id, bytes, what, own),
  release: (id) => ledger.release(id),
  fleetBudgets: () => ({ smallest: ledger.budgetBytes, largest: ledger.budgetBytes }),
});

describe('prepareMerge on one worker', () => {
  let f: Fixture;
  afterEach(() => f?.cleanup());

  it('starts reading a second unit of the same table only once the first is done', async () => {
    const reached: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    f = await makeFixture({
      shards: 2,
      deps: {
        faults: {
          freezeProgress: (p: FreezePoint) => {
            if (p.phase !== 'read') return;
            reached.push(`read attempt ${p.attempt}`);
            // The first unit to read holds until released.
            if (reached.length === 1) return held;
          },
        },
      },
    });
    await sealMany(f, 's0', 1, 50);
    await sealMany(f, 's1', 1, 50);
    const first = start(f.acts.prepareMerge, [{ table: f.table, key: 'id', shard: 's0', fromSeq: 1, toSeq: 1 }]);
    await tick(100);
    const second = start(f.acts.prepareMerge, [{ table: f.table, key: 'id', shard: 's1', fromSeq: 1, toSeq: 1 }]);
    await tick(300);
    expect(reached).toHaveLength(1);
    release();
    const [a, b] = await Promise.all([first.result, second.result]);
    expect([a.shard, b.shard]).toEqual(['s0', 's1']);
    expect(reached).toHaveLength(2);
  });

  it('a preparation waiting for another of its table holds a small reservation, not the poll claim that brought it', async () => {
    // As on a worker: the poll claim is half the budget, so while one waiting activity
    // kept it no other task was polled (the commit holding the turn waited ~265 ms in a
    // bench run). The SDK's part is played here: claim, then mark it used as a task comes.
    const ledger = new MemoryLedger(2 * GiB);
    const admission = admissionOf(ledger);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let reads = 0;
    f = await makeFixture({ shards: 2, deps: { admission, faults: { freezeProgress: (p: FreezePoint) => (p.phase === 'read' && ++reads === 1 ? held : undefined) } } });
    await sealMany(f, 's0', 1, 50);
    await sealMany(f, 's1', 1, 50);
    const poll = async () => ledger.markClaimUsed(await ledger.claim(GiB));
    await poll();
    const first = start(f.acts.prepareMerge, [{ table: f.table, key: 'id', shard: 's0', fromSeq: 1, toSeq: 1 }], { activityId: 'prepare-s0', activityType: 'prepareMerge' });
    await tick(100);
    await poll();
    const second = start(f.acts.prepareMerge, [{ table: f.table, key: 'id', shard: 's1', fromSeq: 1, toSeq: 1 }], { activityId: 'prepare-s1', activityType: 'prepareMerge' });
    await tick(100);
    expect(reads).toBe(1);
    const waiting = ledger.list().find((h) => h.unit?.endsWith('prepare-s1'));
    expect(waiting).toMatchObject({ activity: 'prepareMerge (waiting)', bytes: SMALL_BYTES });
    expect(ledger.list().filter((h) => h.activity === 'poll')).toHaveLength(0);
    // The next poll gets its claim at once, though the second preparation still waits.
    const third = await Promise.race([ledger.claim(GiB), tick(1000).then(() => 'no claim within 1 s')]);
    expect(third).toMatch(/^claim-/);
    release();
    await Promise.all([first.result, second.result]);
    expect(reads).toBe(2);
    // The second went on with its own hold: the claim of the poll still out is untouched.
    expect(ledger.list().map((h) => h.id)).toEqual([third]);
    ledger.release(third);
    expect(ledger.reservedBytes).toBe(0);
  });

  it('a preparation reserves by taking over its own hold, never the claim of a poll still out', async () => {
    // Taking another poller's claim left that poller polling with no bytes behind it; the
    // task it brought then waited in the worker behind later polls' claims, and in CI a
    // worker of test/integration/fleet-memory.test.ts ran no unit for two minutes.
    const ledger = new MemoryLedger(2 * GiB);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    f = await makeFixture({ shards: 1, deps: { admission: admissionOf(ledger), faults: { freezeProgress: (p: FreezePoint) => (p.phase === 'read' ? held : undefined) } } });
    await sealMany(f, 's0', 1, 50);
    ledger.markClaimUsed(await ledger.claim(GiB));
    const outstanding = await ledger.claim(GiB); // the next poll, still waiting for a task
    const prep = start(f.acts.prepareMerge, [{ table: f.table, key: 'id', shard: 's0', fromSeq: 1, toSeq: 1 }], { activityId: 'prepare-s0', activityType: 'prepareMerge' });
    for (let i = 0; i < 250 && !ledger.list().some((h) => h.activity === 'prepareMerge'); i++) await tick(20);
    expect(ledger.list().map((h) => h.id)).toContain(outstanding);
    expect(ledger.list().filter((h) => h.activity !== 'poll').map((h) => h.activity)).toEqual(['prepareMerge']);
    release();
    await prep.result;
    expect(ledger.list().map((h) => h.id)).toEqual([outstanding]);
    ledger.release(outstanding);
    expect(ledger.reservedBytes).toBe(0);
  });
});
