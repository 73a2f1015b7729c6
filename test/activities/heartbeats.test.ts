import { CancelledFailure } from '@temporalio/activity';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createActivities } from '../../activities';
import type { FreezePoint } from '../../activities/deps';
import { FIRST_HEARTBEAT_AFTER_MS, ProgressReporter } from '../../activities/progress';
import { makeFixture, sealMany, start, type Fixture } from './helpers';
import { sleep } from '../../src/util/sleep';

// Heartbeats carry progress: an activity that stops advancing stops heartbeating, even
// if it is alive and keeps "beating", so the heartbeat timeout detects the stall.

let f: Fixture;
beforeEach(async () => {
  f = await makeFixture({ shards: 1 });
});
afterEach(() => f.cleanup());

describe('progress heartbeats', () => {
  it('are sent only when the details change', async () => {
    const r = start(async () => {
      const p = new ProgressReporter('x');
      p.report({ phase: 'read', filesRead: 1, rowsRead: 10 });
      p.report({ phase: 'read', filesRead: 1, rowsRead: 10 });
      p.report({ phase: 'read', filesRead: 2, rowsRead: 20 });
      p.report({ phase: 'read', filesRead: 2, rowsRead: 20 });
    }, []);
    await r.result;
    expect(r.heartbeats).toEqual([
      { phase: 'read', filesRead: 1, rowsRead: 10 },
      { phase: 'read', filesRead: 2, rowsRead: 20 },
    ]);
  });

  it('with a heartbeat timeout the first is held back FIRST_HEARTBEAT_AFTER_MS and carries the latest details; a quick activity sends none', async () => {
    const quick = start(async () => {
      const p = new ProgressReporter('x');
      p.report({ phase: 'commit', step: 'open' });
      p.report({ phase: 'commit', step: 'mergeInsert' });
      await sleep(50);
    }, [], { heartbeatTimeoutMs: 60_000 });
    await quick.result;
    await sleep(FIRST_HEARTBEAT_AFTER_MS + 200);
    expect(quick.heartbeats).toEqual([]);

    const slow = start(async () => {
      const p = new ProgressReporter('x');
      p.report({ phase: 'read', filesRead: 1, rowsRead: 10 });
      p.report({ phase: 'read', filesRead: 2, rowsRead: 20 });
      await sleep(FIRST_HEARTBEAT_AFTER_MS + 200);
      p.report({ phase: 'read', filesRead: 3, rowsRead: 30 });
    }, [], { heartbeatTimeoutMs: 60_000 });
    await slow.result;
    expect(slow.heartbeats).toEqual([
      { phase: 'read', filesRead: 2, rowsRead: 20 },
      { phase: 'read', filesRead: 3, rowsRead: 30 },
    ]);
  });

  it('a frozen prepareMerge that keeps beating emits no new heartbeat, and cancellation ends it', async () => {
    await sealMany(f, 's0', 4, 20);
    let stop = false;
    let reads = 0;
    // Resolved once the hook has beaten this many times while frozen: the test's clock.
    const BEATS = 30;
    let beatenEnough!: () => void;
    const beaten = new Promise<void>((r) => (beatenEnough = r));
    let frozenAt = -1;
    const r = start(
      createActivities({
        dataRoot: f.root,
        faults: {
          freezeProgress: async (pt: FreezePoint) => {
            if (pt.activity !== 'prepareMerge' || pt.phase !== 'read' || pt.attempt !== 1) return;
            // Alive but stuck after the second file: beats the same progress until stopped.
            if (++reads < 2) return;
            frozenAt = r.heartbeats.length;
            for (let beats = 1; !stop; beats++) {
              pt.beat();
              if (beats === BEATS) beatenEnough();
              await sleep(5);
            }
          },
        },
      }).prepareMerge,
      [{ table: f.table, key: 'id', shard: 's0', fromSeq: 1, toSeq: 4 }],
    );
    await beaten;
    expect(r.heartbeats.at(-1)).toMatchObject({ phase: 'read', filesRead: 2 });
    expect(r.heartbeats.length).toBe(frozenAt);
    r.env.cancel();
    await expect(r.result).rejects.toBeInstanceOf(CancelledFailure);
    stop = true;
  });

  it('a frozen commit (a hook that never settles) emits nothing after its last step', async () => {
    await sealMany(f, 's0', 1, 20);
    const prepared = await start(f.acts.prepareMerge, [{ table: f.table, key: 'id', shard: 's0', fromSeq: 1, toSeq: 1 }]).result;
    let reached!: () => void;
    const frozen = new Promise<void>((r) => (reached = r));
    const acts = createActivities({
      dataRoot: f.root,
      faults: {
        freezeProgress: (pt) => {
          if (pt.phase !== 'commit') return;
          reached();
          return new Promise<void>(() => {});
        },
      },
    });
    const heartbeatTimeoutMs = 90;
    const r = start(acts.commitMerge, [{ table: f.table, key: 'id', prepared }], { heartbeatTimeoutMs });
    await frozen;
    // The first heartbeat is held back a quarter of the timeout and carries the latest step.
    await sleep(heartbeatTimeoutMs);
    const atFreeze = [...r.heartbeats];
    expect(atFreeze.at(-1)).toEqual({ phase: 'commit', step: 'open' });
    expect(atFreeze.length).toBeLessThanOrEqual(2);
    // Nothing keeps it alive while frozen: after several heartbeat timeouts, still nothing new.
    await sleep(4 * heartbeatTimeoutMs);
    expect(r.heartbeats).toEqual(atFreeze);
    r.env.cancel();
    await expect(r.result).rejects.toBeInstanceOf(CancelledFailure);
  });

  it('an opaque bounded step is kept alive only until its declared deadline', async () => {
    let deadlineMs = 0;
    const r = start(
      async () => {
        const p = new ProgressReporter('x');
        deadlineMs = Date.now() + 200;
        await p.bounded({ phase: 'commit', step: 'mergeInsert', deadlineMs }, sleep(700));
      },
      [],
      { heartbeatTimeoutMs: 150 },
    );
    const times: number[] = [];
    r.env.on('heartbeat', () => times.push(Date.now()));
    await r.result;
    expect(times.length).toBeGreaterThanOrEqual(3);
    expect(times.filter((t) => t > deadlineMs + 20)).toEqual([]);
  });
});
