import { describe, expect, it } from 'vitest';
import { earliestWake, initialState, nextWakeAt, wakeReason } from '../../src/policy';
import { Driver, demand, prepared, quietTable, simPolicy, twoMergesReady, wakeAts } from './helpers';

// What the table's one timer waits for, as its summary in the Temporal UI: the deadline
// nextWakeAt picks, named.

const MiB = 2 ** 20;

describe('wakeReason', () => {
  it('names the snapshot of a quiet table, and nothing when no timer is needed', () => {
    const d = new Driver(quietTable());
    expect(earliestWake(d.state, 0)).toEqual({ atMs: 3_600_000, reason: 'snapshot of the generation store', id: 'snapshot' });
    const adopted = initialState({ table: 't', key: 'id', shards: [], policy: simPolicy({ periodSecs: { optimize: 0, index: 0, gc: 0 } }), nowMs: 0, adoptedUri: '/data/t.lance' });
    expect(wakeReason({ ...adopted, dueAtMs: { ...adopted.dueAtMs, snapshot: 5000 } }, 0)).toBe('look at the adopted table');
    const inFlight = { ...d.state, snapshotInFlight: true };
    expect([nextWakeAt(inFlight, 0), wakeReason(inFlight, 0)]).toEqual([null, null]);
  });

  it('names the unit a promotion is for and how long it will have waited', () => {
    const d = twoMergesReady({ maxTurnWaitSecs: { merge: 60, optimize: 600, index: 600, gc: 600 } });
    // merge/s0 holds the turn; merge/s1, ready at 2 s, is promoted at 62 s.
    expect(earliestWake(d.state, 2000)).toEqual({ atMs: 62_000, reason: 'promote merge/s1 to class 1 (waited 60 s)', id: 'promote merge/s1 to class 1 (waited 60 s)@62000' });
  });

  it('names a commit backoff with its attempt, and a wait for headroom with its bytes', () => {
    const d = twoMergesReady({ commitRetryBaseSecs: 2, commitRetryMaxSecs: 5 });
    const ds = d.at(3000).send({ type: 'commitFailed', unitId: 'merge/s0', error: 'conflict', retryable: true, stalled: false });
    expect(wakeAts(ds)[0]).toEqual({ type: 'wakeAt', atMs: 5000, reason: 'retry commit of merge/s0 (attempt 2)', id: 'retry commit of merge/s0 (attempt 2)@5000' });

    const h = new Driver(quietTable({ commitAdmissionWaitSecs: 5, commitRetryMaxSecs: 60 }));
    h.send(demand('s0', 3, 1));
    h.at(1000).send(prepared('merge/s0'));
    const hs = h.at(7000).send({ type: 'noHeadroom', unitId: 'merge/s0', bytes: 380 * MiB });
    expect(wakeAts(hs)[0]).toEqual({ type: 'wakeAt', atMs: 12_000, reason: 'merge/s0 may take the turn again (no worker had 380 MiB of headroom)', id: 'merge/s0 may take the turn again (no worker had 380 MiB of headroom)@12000' });
  });

  it('names a bump that expires and a periodic kind that falls due', () => {
    const d = new Driver(quietTable({ periodSecs: { optimize: 0, index: 0, gc: 0 } }));
    d.send({ type: 'bump', bump: { target: { unitId: 'merge/s1' }, class: 1, reason: 'hot', expiresAtMs: 30_000 } });
    expect(wakeReason(d.state, 0)).toBe('bump of merge/s1 to class 1 expires');
    d.send({ type: 'bump', bump: { target: { kind: 'gc' }, class: 2, reason: 'disk', expiresAtMs: 20_000 } });
    expect(wakeReason(d.state, 0)).toBe('bump of kind gc to class 2 expires');

    const p = new Driver(quietTable({ periodSecs: { optimize: 60, index: 0, gc: 0 }, periodicWhenIdle: true }));
    // A quarter period after its (jittered) due time, so a write's workflow task may start it first.
    expect(earliestWake(p.state, 0)).toEqual({ atMs: p.state.dueAtMs.optimize + 15_000, reason: 'optimize due (every 60 s)', id: `optimize due (every 60 s)@${p.state.dueAtMs.optimize + 15_000}` });
  });

  it('gives every wakeAt decision the reason of its deadline', () => {
    const d = twoMergesReady();
    for (const w of wakeAts(d.decisions)) expect(w.reason === null).toBe(w.atMs === null);
  });
});
