import { step } from '../../src/policy';
import type { Kind, TableState, Unit } from '../../src/policy/types';
import type { StepInfo } from '../../src/sim';

// Per-step checks the property tests run on every step of simulated runs. They are
// written against the state, independently of the core's own helpers, and use plain
// throws rather than expect() because they run millions of times.

export function ensure(cond: boolean, what: string, info?: StepInfo): asserts cond {
  if (!cond) {
    const where = info ? ` (at ${info.nowMs} ms after ${JSON.stringify(info.event)})` : '';
    throw new Error(`${what}${where}`);
  }
}

/** Ready, and nothing but the streak rule keeps it from the turn (a pipelined follower waits for its head). */
export function eligible(s: TableState, u: Unit): boolean {
  if (u.state !== 'ready' || u.emptyPrepared || s.paused || s.pausedKinds.includes(u.kind)) return false;
  const shard = u.shard === null ? undefined : s.shards.find((x) => x.shard === u.shard);
  if (u.kind === 'merge' && shard && (u.fromSeq ?? 0) > shard.mergedThroughSeq + 1) return false;
  return shard?.heldReason == null;
}

/** Property 1: one holder; a commit only when the turn was free; committing == holder. */
export function checkOneHolder(info: StepInfo): void {
  const { before, event, after, decisions, nowMs } = info;
  const commits = decisions.filter((d) => d.type === 'commit');
  ensure(commits.length <= 1, 'at most one grant per step', info);
  const c = commits[0];
  if (c) {
    const released = (event.type === 'committed' || event.type === 'commitFailed') && before.turn?.unitId === event.unitId;
    ensure(before.turn === null || released, `commit for ${c.unit.id} while ${before.turn?.unitId} held the turn`, info);
    ensure(after.turn?.unitId === c.unit.id && after.turn.sinceMs === nowMs, 'the granted unit holds the turn', info);
    const riders = (c.type === 'commit' && c.riders) || [];
    ensure(JSON.stringify(riders.map((r) => r.id)) === JSON.stringify(after.turn.riders ?? []), 'the turn lists the riders granted with it', info);
    // Merges, and optimize and gc made to ride along (src/policy/rides.ts), only in a merge's turn.
    const rides = (r: Unit) => r.kind === 'merge' || (r.rider === true && (r.kind === 'optimize' || r.kind === 'gc'));
    ensure(riders.length === 0 || (c.unit.kind === 'merge' && riders.every(rides)), 'only merges, and optimize and gc riding, ride in a merge turn', info);
    // Merged watermarks move contiguously: no range commits while one before it is unmerged.
    for (const m of [c.unit, ...riders]) {
      if (m.kind !== 'merge') continue;
      // After the event was folded in: grants are decided on that state.
      const merged = after.shards.find((x) => x.shard === m.shard)?.mergedThroughSeq ?? 0;
      ensure((m.fromSeq ?? 0) <= merged + 1, `${m.id} (${m.fromSeq}..${m.toSeq}) committed while ${m.shard} is merged only through ${merged}`, info);
    }
    const shards = [c.unit, ...riders].filter((m) => m.kind === 'merge').map((m) => m.shard);
    ensure(new Set(shards).size === shards.length, 'two ranges of one shard in one turn', info);
  }
  // One turn: its holder and the merges riding in it are the only units committing.
  const inTurn = new Set([after.turn?.unitId, ...(after.turn?.riders ?? [])]);
  let committing = 0;
  const ids = new Set<string>();
  for (const u of after.units) {
    ids.add(u.id);
    if (u.state !== 'committing') continue;
    committing++;
    ensure(inTurn.has(u.id), `${u.id} is committing without the turn`, info);
  }
  ensure(after.turn === null || committing === 1 + (after.turn.riders?.length ?? 0), 'a turn whose units are not all committing', info);
  ensure(after.turn !== null || committing === 0, 'units committing with no turn held', info);
  ensure(ids.size === after.units.length, 'duplicate unit ids', info);
}

/** Property 3: a kind past its maxConsecutiveTurns got the turn only if no other kind was eligible. */
export function checkStreak(info: StepInfo): void {
  const { after, decisions } = info;
  const c = decisions.find((d) => d.type === 'commit');
  if (!c || c.type !== 'commit') return;
  const k: Kind = c.unit.kind;
  ensure(after.streak?.kind === k, 'streak follows the grant', info);
  if (after.streak.count > after.policy.maxConsecutiveTurns[k]) {
    // Units other than the granted one are unchanged by the grant, so `after` shows
    // what was eligible at grant time.
    const others = after.units.filter((u) => u.kind !== k && eligible(after, u));
    ensure(others.length === 0, `${k} took turn ${after.streak.count} in a row while ${others.map((u) => u.id).join(',')} was ready`, info);
  }
}

/** The shell contract and the state's own invariants. */
export function checkContract(info: StepInfo): void {
  const { before, after, decisions, nowMs } = info;
  const wakes = decisions.filter((d) => d.type === 'wakeAt');
  ensure(wakes.length === 1, 'exactly one wakeAt', info);
  const w = wakes[0]!;
  ensure(w.type === 'wakeAt' && (w.atMs === null || w.atMs > nowMs), 'wakeAt in the future', info);
  for (const a of after.shards) {
    ensure(a.sealedThroughSeq >= a.mergedThroughSeq, `${a.shard}: sealed below merged`, info);
    const b = before.shards.find((x) => x.shard === a.shard);
    ensure(!b || a.mergedThroughSeq >= b.mergedThroughSeq, `${a.shard}: merged went down`, info);
  }
  for (const shard of after.shards) {
    const merges = after.units.filter((u) => u.kind === 'merge' && u.shard === shard.shard).sort((a, b) => (a.fromSeq ?? 0) - (b.fromSeq ?? 0));
    ensure(merges.length <= 2, `${shard.shard}: ${merges.length} merge units`, info);
    if (merges.length === 2) ensure(merges[1]!.fromSeq === (merges[0]!.toSeq ?? 0) + 1, `${shard.shard}: a follower not right after its head`, info);
  }
  const preparing = (s: TableState) => s.units.filter((u) => u.state === 'preparing').length;
  ensure(preparing(after) <= Math.max(preparing(before), after.policy.maxConcurrentPreparations), 'too many preparations', info);
}

/** Only what survives JSON unchanged: no undefined, NaN, Infinity, Map or Date. */
export function isJson(v: unknown): boolean {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return true;
  if (typeof v === 'number') return Number.isFinite(v);
  if (Array.isArray(v)) return v.every(isJson);
  if (typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) return Object.values(v).every(isJson);
  return false;
}

/** JSON-safe, and evaluating again at the same time changes nothing (so late events are harmless). */
export function checkStable(info: StepInfo): void {
  ensure(isJson(info.after), 'state is plain JSON', info);
  const again = step(info.after, { type: 'timer' }, info.nowMs);
  ensure(JSON.stringify(again.state) === JSON.stringify(info.after), 'evaluation is a fixpoint', info);
  ensure(again.decisions.length === 1, 'a repeated evaluation decides nothing new', info);
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}

/** step() is a function of its arguments and does not touch its input. */
export function checkPure(info: StepInfo): void {
  const r = step(deepFreeze(info.before), info.event, info.nowMs);
  ensure(JSON.stringify(r.state) === JSON.stringify(info.after), 'step is deterministic', info);
  ensure(JSON.stringify(r.decisions) === JSON.stringify(info.decisions), 'decisions are deterministic', info);
}
