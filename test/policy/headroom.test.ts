import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { statusView, step, stepAll } from '../../src/policy';
import type { PolicyEvent, TableState } from '../../src/policy/types';
import { commits, Driver, demand, prepared, quietTable } from './helpers';

// Never holds the turn while waiting: a commit no worker takes (no memory
// headroom in the fleet) comes back as `noHeadroom`; the core frees the turn at once
// and the unit waits on a durable, doubling timer. Properties: the turn is never held
// by a unit that waits for headroom, its waits never shrink to a busy retry, and once
// headroom returns every unit is committed (every sealed generation merged).

const MiB = 2 ** 20;

describe('commits waiting for memory headroom', () => {
  it('gives the turn back at once, to the next ready unit, and shows what it waits for', () => {
    const d = new Driver(quietTable({ commitAdmissionWaitSecs: 5, commitRetryMaxSecs: 60 }));
    d.send(demand('s0', 3, 1));
    d.send(demand('s1', 2, 2));
    d.at(1000).send(prepared('merge/s0'));
    d.at(2000).send(prepared('merge/s1'));
    expect(d.state.turn?.unitId).toBe('merge/s0');
    const ds = d.at(7000).send({ type: 'noHeadroom', unitId: 'merge/s0', bytes: 380 * MiB });
    expect(commits(ds).map((c) => c.unit.id)).toEqual(['merge/s1']);
    expect(d.unit('merge/s0')).toMatchObject({ state: 'backoff', notBeforeMs: 12_000, waitingForBytes: 380 * MiB, headroomWaits: 1, commitAttempts: 0 });
    expect(d.state.counters.headroomWaits).toBe(1);
    const q = statusView(d.state, 7000).queue.find((e) => e.unitId === 'merge/s0');
    expect(q?.reason).toBe('waiting for 380 MiB of headroom: no worker took its commit within 5 s (1 time), the turn is free; again at +5 s');
    // The next wait doubles; a result for a unit that does not hold the turn changes nothing.
    const calm = step(d.state, { type: 'timer' }, 8000).state;
    expect(step(d.state, { type: 'noHeadroom', unitId: 'merge/s0', bytes: 1 }, 8000).state).toStrictEqual(calm);
    d.at(9000).send({ type: 'committed', unitId: 'merge/s1', version: 2, attempts: 1 });
    d.at(12_000).send({ type: 'timer' });
    expect(d.state.turn?.unitId).toBe('merge/s0');
    d.at(17_000).send({ type: 'noHeadroom', unitId: 'merge/s0', bytes: 380 * MiB });
    expect(d.unit('merge/s0')).toMatchObject({ state: 'backoff', notBeforeMs: 27_000, headroomWaits: 2 });
    expect(d.state.turn).toBeNull();
  });

  it('a commit taken and failed starts its next headroom wait afresh', () => {
    const d = new Driver(quietTable({ commitAdmissionWaitSecs: 2, commitRetryBaseSecs: 1 }));
    d.send(demand('s0', 1, 1));
    d.at(10).send(prepared('merge/s0'));
    d.at(2010).send({ type: 'noHeadroom', unitId: 'merge/s0', bytes: 100 });
    d.at(4010).send({ type: 'timer' });
    d.at(4020).send({ type: 'commitFailed', unitId: 'merge/s0', error: 'x', retryable: true, stalled: false });
    const u = d.unit('merge/s0')!;
    expect([u.waitingForBytes, u.headroomWaits, u.commitAttempts]).toEqual([undefined, undefined, 1]);
  });

  it('property: the turn is free of units waiting for headroom, waits never shrink below the base, and all is merged once headroom returns', () => {
    const world = fc.record({
      shards: fc.integer({ min: 1, max: 3 }),
      seqs: fc.array(fc.integer({ min: 1, max: 6 }), { minLength: 1, maxLength: 3 }),
      waitSecs: fc.constantFrom(1, 5, 10),
      maxSecs: fc.constantFrom(1, 30, 120),
      prepareMs: fc.integer({ min: 1, max: 3000 }),
      commitMs: fc.integer({ min: 1, max: 3000 }),
      // Headroom is back after this long; before, a commit is taken only with this chance.
      fullUntilMs: fc.integer({ min: 0, max: 600_000 }),
      takenChance: fc.constantFrom(0, 0.3),
      seed: fc.integer(),
    });
    fc.assert(
      fc.property(world, (w) => {
        const names = ['s0', 's1', 's2'].slice(0, w.shards);
        let state: TableState = quietTable({ commitAdmissionWaitSecs: w.waitSecs, commitRetryMaxSecs: w.maxSecs, commitRetryBaseSecs: 1 }, names);
        let rnd = w.seed >>> 0;
        const random = () => ((rnd = (rnd * 1664525 + 1013904223) >>> 0) / 2 ** 32);
        const pending: { atMs: number; ev: PolicyEvent }[] = [];
        let wakeAt: number | null = null;
        const lastNoHeadroom = new Map<string, number>();
        let nowMs = 0;
        const run = (evs: PolicyEvent[]) => {
          const r = stepAll(state, evs, nowMs);
          state = r.state;
          for (const e of evs) if (e.type === 'noHeadroom') lastNoHeadroom.set(e.unitId, nowMs);
          for (const d of r.decisions) {
            if (d.type === 'wakeAt') wakeAt = d.atMs;
            else if (d.type === 'prepare') pending.push({ atMs: nowMs + w.prepareMs, ev: prepared(d.unit.id) });
            else if (d.type === 'snapshot') pending.push({ atMs: nowMs + 1, ev: { type: 'snapshot', revision: 0, shards: [] } });
            else if (d.type === 'commit') {
              const taken = nowMs >= w.fullUntilMs || random() < w.takenChance;
              pending.push(
                taken
                  ? { atMs: nowMs + w.commitMs, ev: { type: 'committed', unitId: d.unit.id, version: 1, attempts: 1 } }
                  : { atMs: nowMs + w.waitSecs * 1000, ev: { type: 'noHeadroom', unitId: d.unit.id, bytes: 400 * MiB } },
              );
            }
          }
          // The turn is never held by a unit that waits for headroom.
          for (const u of state.units) {
            if (u.state !== 'backoff' || u.waitingForBytes === undefined) continue;
            expect(state.turn?.unitId).not.toBe(u.id);
            expect(state.turn?.riders ?? []).not.toContain(u.id);
          }
          // No busy retry: a unit whose commit found no headroom is not granted the turn
          // again before the base wait has passed.
          for (const d of r.decisions) {
            if (d.type !== 'commit') continue;
            for (const id of [d.unit.id, ...(d.riders ?? []).map((x) => x.id)]) {
              const last = lastNoHeadroom.get(id);
              if (last !== undefined) expect(nowMs - last).toBeGreaterThanOrEqual(w.waitSecs * 1000);
            }
          }
        };
        run(names.map((s, i) => demand(s, w.seqs[i % w.seqs.length]!, i + 1)));
        const horizon = w.fullUntilMs + 3_600_000;
        while (nowMs <= horizon) {
          const nextPending = pending.length ? Math.min(...pending.map((p) => p.atMs)) : Infinity;
          const next = Math.min(nextPending, wakeAt ?? Infinity);
          if (next === Infinity) break;
          nowMs = Math.max(nowMs, next);
          const due = pending.filter((p) => p.atMs <= nowMs);
          for (const p of due) pending.splice(pending.indexOf(p), 1);
          if (wakeAt !== null && wakeAt <= nowMs) wakeAt = null;
          run(due.length ? due.map((p) => p.ev) : [{ type: 'timer' }]);
          if (state.shards.every((s) => s.mergedThroughSeq === s.sealedThroughSeq) && state.units.length === 0) break;
        }
        expect(state.shards.map((s) => s.mergedThroughSeq)).toEqual(state.shards.map((s) => s.sealedThroughSeq));
      }),
      { numRuns: 150 },
    );
  });
});
