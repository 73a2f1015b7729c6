import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { maxSnapshotSecs } from '../../src/policy';
import type { PolicyEvent, TableState } from '../../src/policy/types';
import { runSimulation, type SimConfig, type StepInfo } from '../../src/sim';
import { durationsArb, policyArb, rangeArb } from './helpers';
import { yieldToRunner } from './helpers';
import { checkContract, checkOneHolder, ensure } from './invariants';

// The idle-cost rules (src/policy/idle.ts) over simulated runs: the documented bound on
// recovering a lost demand signal, the return to the short period on activity, and what an
// idle table costs.

const MIN = 60_000;
const SCAN: readonly [number, number] = [50, 2_000];

/** Whether a step moved a shard's watermark (seq or revision). */
function raised(before: TableState, after: TableState, shard: string): boolean {
  const mark = (st: TableState) => {
    const s = st.shards.find((x) => x.shard === shard);
    return s ? `${s.sealedThroughSeq}/${s.sealedRevision}` : null;
  };
  return mark(before) !== mark(after);
}

const writersArb = fc.record({
  seed: fc.integer(),
  shards: fc.integer({ min: 1, max: 3 }).map((n) => Array.from({ length: n }, (_, i) => `s${i}`)),
  policy: policyArb,
  durations: durationsArb,
  everyMs: rangeArb(500, 30 * MIN) as fc.Arbitrary<[number, number]>,
  delayMs: rangeArb(0, 3_000) as fc.Arbitrary<[number, number]>,
  lostProb: fc.constantFrom<number>(0.05, 0.3, 1),
  minutes: fc.integer({ min: 5, max: 120 }),
  // Workers since the preparation scan (true) and before it (false).
  scanOnPrepare: fc.boolean(),
  // Demands that report a small size make direct merges (no preparation activity).
  bytes: fc.constantFrom(undefined, 1000),
  bumps: fc.array(fc.record({ atMs: fc.integer({ min: 0, max: 120 * MIN }), kind: fc.constantFrom('optimize' as const, 'index' as const, 'gc' as const) }), { maxLength: 3 }),
});
type Writers = typeof writersArb extends fc.Arbitrary<infer T> ? T : never;

function config(w: Writers, extra: Partial<SimConfig>): SimConfig {
  const stopMs = w.minutes * MIN;
  return {
    seed: w.seed,
    shards: w.shards,
    policy: w.policy,
    endMs: stopMs + 3 * maxSnapshotSecs(w.policy) * 1000,
    ...w.durations,
    snapshotMs: SCAN,
    scanOnPrepare: w.scanOnPrepare,
    arrivals: [{ everyMs: w.everyMs, deliveryDelayMs: w.delayMs, lostProb: w.lostProb, stopMs, ...(w.bytes !== undefined ? { bytesPerGeneration: w.bytes } : {}) }],
    operator: w.bumps.map((b) => ({
      atMs: b.atMs,
      event: (nowMs: number): PolicyEvent => ({ type: 'bump', bump: { target: { kind: b.kind }, class: 2, reason: 'test', expiresAtMs: nowMs + MIN } }),
    })),
    ...extra,
  };
}

describe('idle-cost properties over simulated runs', () => {
  it('a seal whose demand signal is lost is known to the core within snapshotMaxIntervalSecs (+ two scans)', async () => {
    let recoveredLate = 0;
    await fc.assert(
      fc.asyncProperty(writersArb, async (w) => {
        await yieldToRunner();
        const boundMs = maxSnapshotSecs(w.policy) * 1000 + 2 * SCAN[1];
        const seals: { shard: string; seq: number; atMs: number }[] = [];
        const check = (state: TableState, nowMs: number, info?: StepInfo) => {
          while (seals.length > 0 && nowMs > seals[0]!.atMs + boundMs) {
            const s = seals.shift()!;
            const known = state.shards.find((x) => x.shard === s.shard)?.sealedThroughSeq ?? 0;
            ensure(known >= s.seq, `${s.shard} seq ${s.seq} sealed at ${s.atMs} ms still unknown ${nowMs - s.atMs} ms later (bound ${boundMs})`, info);
          }
        };
        const r = runSimulation(
          config(w, {
            onSeal: (s) => seals.push(s),
            onStep: (info) => {
              checkOneHolder(info);
              checkContract(info);
              // Recovered by a scan (not by a later demand of the same shard), late: the bound was needed.
              if (info.event.type === 'snapshot') {
                for (const s of seals) {
                  const before = info.before.shards.find((x) => x.shard === s.shard)?.sealedThroughSeq ?? 0;
                  const after = info.after.shards.find((x) => x.shard === s.shard)?.sealedThroughSeq ?? 0;
                  if (before < s.seq && after >= s.seq && info.nowMs - s.atMs > w.policy.snapshotIntervalSecs * 2000) recoveredLate++;
                }
              }
              check(info.after, info.nowMs, info);
            },
          }),
        );
        // The run goes on for three max periods after the last seal: nothing is left unchecked.
        check(r.state, r.nowMs);
        expect(seals.filter((s) => s.atMs + boundMs < r.nowMs)).toEqual([]);
      }),
      { numRuns: 400 },
    );
    expect(recoveredLate).toBeGreaterThan(50);
  });

  it('after a demand signal that raised a watermark a scan starts within snapshotIntervalSecs (+ one scan), or a preparation or commit begun since then scanned, or a direct commit granted with it failed later', async () => {
    await fc.assert(
      fc.asyncProperty(writersArb, async (w) => {
        await yieldToRunner();
        const boundMs = w.policy.snapshotIntervalSecs * 1000 + SCAN[1];
        let pendingSince: number | null = null;
        // A direct merge granted with the demand defers the pull-in to its end (idle.ts,
        // settlePullIn): ending without a scan after the bound, it starts the scan then.
        let directEndedAt = -Infinity;
        runSimulation(
          config(w, {
            onStep: ({ event, decisions, nowMs, before, after }) => {
              // A demand the table already knew announces no seal (events.ts): no scan owed.
              if (event.type === 'demand' && pendingSince === null && raised(before, after, event.shard)) {
                pendingSince = nowMs;
                directEndedAt = -Infinity;
              }
              if ((event.type === 'committed' || event.type === 'commitFailed' || event.type === 'noHeadroom') && pendingSince !== null && before.turn?.unitId === event.unitId && before.turn.sinceMs >= pendingSince) {
                const u = before.units.find((x) => x.id === event.unitId);
                if (u?.kind === 'merge' && u.prepared?.direct) directEndedAt = nowMs;
              }
              if (decisions.some((d) => d.type === 'snapshot')) pendingSince = null;
              if (event.type === 'prepared' && event.scan && pendingSince !== null) {
                const u = before.units.find((x) => x.id === event.unitId);
                if (u && u.createdAtMs >= pendingSince) pendingSince = null;
              }
              if (event.type === 'committed' && event.scan && pendingSince !== null && (before.turn?.sinceMs ?? -1) >= pendingSince) pendingSince = null;
              const directHolds = pendingSince !== null && after.turn !== null && after.turn.sinceMs >= pendingSince && after.units.some((u) => u.id === after.turn!.unitId && u.kind === 'merge' && u.prepared?.direct);
              ensure(pendingSince === null || directHolds || nowMs <= Math.max(pendingSince + boundMs, directEndedAt + SCAN[1]), `no scan ${nowMs - (pendingSince ?? 0)} ms after a demand (bound ${boundMs})`);
            },
          }),
        );
      }),
      { numRuns: 400 },
    );
  });

  it('an idle table: no preparations, one scan per snapshotMaxIntervalSecs, two steps per scan', async () => {
    const arb = fc.record({ seed: fc.integer(), policy: policyArb.map((p) => ({ ...p, periodicWhenIdle: false })), durations: durationsArb, hours: fc.integer({ min: 1, max: 48 }) });
    await fc.assert(
      fc.asyncProperty(arb, async ({ seed, policy, durations, hours }) => {
        await yieldToRunner();
        const endMs = hours * 60 * MIN;
        const r = runSimulation({ seed, shards: ['s0', 's1'], policy, endMs, ...durations, snapshotMs: SCAN, onStep: ({ decisions }) => ensure(!decisions.some((d) => d.type === 'prepare'), 'an idle table prepared something') });
        // Steps are what the workflow runs as tasks: the first, then a scan's result and
        // the timer of the next one, for every scan after the first.
        const scans = Math.floor(endMs / (maxSnapshotSecs(policy) * 1000));
        expect(r.steps).toBeLessThanOrEqual(2 + 2 * scans);
        // With a max of 15 min or more: at most 4 scans an hour, 8 steps, plus the first two.
        if (maxSnapshotSecs(policy) >= 900) expect(r.steps / hours).toBeLessThanOrEqual(2 + 8);
      }),
      { numRuns: 300 },
    );
  });
});
