import fc from 'fast-check';
import { expect, it } from 'vitest';
import { applyOverride, defaultPolicy } from '../../src/config/policy-schema';
import { checkAwaitMerged, checkSignal, type SignalName } from '../../src/messages/message-check';
import { payloadProblem } from '../../src/messages/payload-limit';
import { seqHorizon, stepAll } from '../../src/policy';
import { KINDS, type PolicyEvent, type TableState } from '../../src/policy/types';
import { awaitMergedSchema, bumpSchema, demandSchema, demandsSchema, pauseSchema } from '../../src/messages/payload-schemas';
import { checkContract, checkOneHolder, checkStable, ensure, isJson } from './invariants';
import { committed, prepared, quietTable, yieldToRunner } from './helpers';

// Fuzzing: what a buggy or hostile client can put on the wire is any JSON
// value, not a well-typed event. Everything a payload passes through before it reaches
// the core (the wire schemas, the table checks, the policy override) must take any value
// without throwing (a throw in a signal handler fails the workflow task again and again),
// and whatever it admits must keep the core's invariants.

const SHARDS = ['s0', 's1', 's2'];

/** Values a field may hold in a hostile payload: right, wrong type, out of range, huge. */
const junk = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom(-1, 0.5, 1e300, -0, Number.MAX_SAFE_INTEGER, 2 ** 53 + 2, '', 'x'.repeat(300), null, [], {}),
);
const seqArb = fc.oneof(fc.nat({ max: 50 }), fc.integer({ min: 50, max: 300_000 }), junk);
const shardArb = fc.oneof(fc.constantFrom(...SHARDS, 's9', 'S0', '../x', ''), junk);
const kindArb = fc.oneof(fc.constantFrom(...KINDS, 'compact', null), junk);
const unitArb = fc.oneof(fc.constantFrom('merge/s0', 'merge/s1', 'merge/s9', 'optimize', 'gc', ''), junk);

/** Almost-right payloads (where bugs hide) mixed with arbitrary JSON and arbitrary values. */
const demandArb = fc.oneof(fc.record({ shard: shardArb, sealedThroughSeq: seqArb, revision: seqArb }, { requiredKeys: [] }), fc.jsonValue());
const payloadOf: Record<SignalName, fc.Arbitrary<unknown>> = {
  demand: demandArb,
  demands: fc.oneof(fc.array(demandArb, { maxLength: 6 }), fc.array(demandArb, { minLength: 1001, maxLength: 1002 }), fc.jsonValue()),
  bump: fc.oneof(fc.record({ kind: kindArb, unitId: unitArb, class: junk, reason: fc.oneof(fc.string(), junk), forSecs: junk }, { requiredKeys: [] }), fc.anything()),
  pause: fc.oneof(fc.record({ kind: kindArb }, { requiredKeys: [] }), fc.anything()),
  resume: fc.oneof(fc.record({ kind: kindArb }, { requiredKeys: [] }), fc.anything()),
};
const signalArb = fc.constantFrom(...(Object.keys(payloadOf) as SignalName[])).chain((name) => payloadOf[name].map((raw) => ({ name, raw })));

/** Activity results mixed in, so the admitted signals meet units in every state. */
const resultArb = fc.constantFrom<PolicyEvent>(prepared('merge/s0'), prepared('merge/s1'), committed('merge/s0', 2), committed('merge/s1', 3), { type: 'timer' });

it('the wire schemas and the policy override take any value without throwing', () => {
  fc.assert(
    fc.property(fc.anything({ withNullPrototype: true, withBigInt: true, withDate: true, withMap: true, withSet: true, withTypedArray: true, withSparseArray: true }), (v) => {
      for (const s of [demandSchema, demandsSchema, bumpSchema, pauseSchema, awaitMergedSchema]) expect(typeof s.safeParse(v).success).toBe('boolean');
      const r = applyOverride(defaultPolicy(), v);
      if (!r.ok) expect(r.error).not.toMatch(/\n/);
      expect(payloadProblem('x', v) === null || typeof payloadProblem('x', v) === 'string').toBe(true);
    }),
    { numRuns: 2000 },
  );
});

it('arbitrary signals: nothing throws, each payload is admitted or dropped with a reason, admitted ones keep the invariants and watermarks exact', async () => {
  for (let batch = 0; batch < 12; batch++) {
    await yieldToRunner();
    fc.assert(
      fc.property(fc.array(fc.oneof({ weight: 4, arbitrary: signalArb.map((s) => ({ ...s, result: null })) }, resultArb.map((result) => ({ name: null, raw: null, result }))), { maxLength: 40 }), (steps) => {
        let st: TableState = quietTable({}, SHARDS);
        // What the folded watermark must be: the maximum of the admitted demands (merges only push it up).
        const maxSealed: Record<string, number> = Object.fromEntries(SHARDS.map((s) => [s, 0]));
        let nowMs = 1000;
        for (const s of steps) {
          nowMs += 500;
          let events: PolicyEvent[];
          if (s.name === null) events = [s.result!];
          else {
            const r = checkSignal(st, s.name, s.raw, nowMs);
            ensure(r.events.length + r.rejected.length >= 1, `${s.name}: neither admitted nor rejected`);
            for (const why of r.rejected) ensure(why.length > 0 && !why.includes('\n'), `one-line reason: ${why}`);
            events = r.events;
          }
          for (const e of events) {
            if (e.type !== 'demand') continue;
            ensure(SHARDS.includes(e.shard), `admitted a demand for unknown shard ${e.shard}`);
            const known = st.shards.find((x) => x.shard === e.shard)!.sealedThroughSeq;
            ensure(e.sealedThroughSeq <= known + seqHorizon(st.policy.hardBacklog), `admitted an implausible seq ${e.sealedThroughSeq}`);
            maxSealed[e.shard] = Math.max(maxSealed[e.shard]!, e.sealedThroughSeq);
          }
          const before = st;
          const r = stepAll(st, events, nowMs);
          st = r.state;
          const info = { nowMs, event: events[0] ?? { type: 'timer' as const }, before, after: st, decisions: r.decisions };
          checkOneHolder(info);
          checkContract(info);
          checkStable(info);
          ensure(isJson(st), 'state is plain JSON');
          ensure(JSON.stringify(st.shards.map((x) => x.shard)) === JSON.stringify(SHARDS), `shards changed: ${st.shards.map((x) => x.shard).join(',')}`);
          for (const x of st.shards) ensure(x.sealedThroughSeq === Math.max(maxSealed[x.shard]!, x.mergedThroughSeq), `${x.shard}: sealed ${x.sealedThroughSeq}, admitted max ${maxSealed[x.shard]}`);
        }
      }),
      { numRuns: 50 },
    );
  }
});

it('arbitrary awaitMerged requests: refused in the validator unless well-shaped, for a shard of the table and a plausible seq', () => {
  const st = quietTable({}, SHARDS);
  fc.assert(
    fc.property(fc.oneof(fc.record({ shard: shardArb, seq: seqArb }, { requiredKeys: [] }), fc.anything()), (raw) => {
      const why = checkAwaitMerged(st, raw);
      const shaped = awaitMergedSchema.safeParse(raw);
      const plausible = shaped.success && SHARDS.includes(shaped.data.shard) && shaped.data.seq <= seqHorizon(st.policy.hardBacklog);
      expect(why === null).toBe(plausible);
      if (why !== null) expect(why).toMatch(/^awaitMerged: [^\n]+$/);
    }),
    { numRuns: 3000 },
  );
});
