import { backlogOf } from '../policy/pressure';
import { initialState } from '../policy/initial';
import { step } from '../policy/step';
import type { Decision, Kind, Maintained, PolicyEvent, StoreScan, TableState, Unit } from '../policy/types';
import { isRidingKind } from '../policy/rides';
import { TimeQueue } from './queue';
import { chance, draw, mulberry32, type Rng } from './rng';
import type { ArrivalProcess, FaultRates, ScheduledSeal, SimConfig, SimResult, TurnRecord } from './types';

// A discrete-event stand-in for the table workflow shell: it feeds the core events at
// simulated times, "runs" the activities the core asks for with configured durations
// and failure rates, and keeps the single timer the core asks for. No Temporal.
//
// It re-implements the shell only as far as the core's scheduling needs, and does NOT
// cover (test/workflows/table-shell.test.ts drives the real shell for these):
// - batching: it steps one event at a time, where the shell applies every event of one
//   activation together (stepAll);
// - the Alarm's re-arming only when the deadline moves earlier, continue-as-new (draining,
//   carryOver, awaitMerged answering merged=false), the bounded signal inbox, the
//   payload validators of signals and updates, search attributes and current details;
// - Temporal's own retry policy, heartbeat timeouts and activity timeouts: attempts,
//   stalls and failures are drawn from the configured fault rates instead.

type Item =
  | { t: 'deliver'; event: PolicyEvent }
  | { t: 'seal'; proc: number; shard: string }
  | { t: 'scheduled'; seal: ScheduledSeal }
  | { t: 'timer'; token: number }
  | { t: 'optimize' }
  | { t: 'operator'; index: number }
  | { t: 'sample' };

class Simulation {
  private readonly rng: Rng;
  private readonly q = new TimeQueue<Item>();
  private state: TableState;
  private now: number;
  private steps = 0;
  private timerToken = 0;
  private revision = 0;
  private version = 0;
  private readonly sealed: Record<string, number> = {};
  private readonly sealRevision: Record<string, number> = {};
  private readonly openTurns = new Map<string, TurnRecord>();
  private readonly result: Pick<SimResult, 'turns' | 'samples'> = { turns: [], samples: [] };
  /** The rest of cfg.seals; null once it is used up. */
  private schedule: Iterator<ScheduledSeal> | null;

  constructor(private readonly cfg: SimConfig) {
    this.rng = mulberry32(cfg.seed);
    this.now = cfg.startMs ?? 0;
    this.state = initialState({ table: cfg.table ?? 'sim', key: 'id', shards: cfg.shards, policy: cfg.policy, nowMs: this.now });
    for (const s of cfg.shards) {
      this.sealed[s] = 0;
      this.sealRevision[s] = 0;
    }
    (cfg.arrivals ?? []).forEach((p, i) => {
      for (const shard of p.shards ?? cfg.shards) this.q.push((p.startMs ?? this.now) + draw(this.rng, p.everyMs), { t: 'seal', proc: i, shard });
    });
    this.schedule = cfg.seals ? cfg.seals[Symbol.iterator]() : null;
    this.nextScheduled();
    if (cfg.optimizeEverySecs) this.q.push(this.now + cfg.optimizeEverySecs * 1000, { t: 'optimize' });
    (cfg.operator ?? []).forEach((o, index) => this.q.push(o.atMs, { t: 'operator', index }));
    if (cfg.sampleEveryMs) this.q.push(this.now, { t: 'sample' });
  }

  run(): SimResult {
    this.feed({ type: 'timer' });
    for (;;) {
      const at = this.q.peekTime();
      if (at === null || at > this.cfg.endMs) break;
      const { item } = this.q.pop()!;
      this.now = at;
      this.handle(item);
      if (this.cfg.stopWhen?.(this.state, this.now, { sealed: this.sealed, arrivalsDone: this.arrivalsDone() })) break;
    }
    return { state: this.state, nowMs: this.now, steps: this.steps, sealed: { ...this.sealed }, ...this.result };
  }

  private arrivalsDone(): boolean {
    return this.schedule === null && (this.cfg.arrivals ?? []).every((p) => p.stopMs !== undefined && this.now >= p.stopMs);
  }

  /** Queues the next scheduled seal; one at a time, so a long schedule costs no memory up front. */
  private nextScheduled(): void {
    if (!this.schedule) return;
    const n = this.schedule.next();
    if (n.done) {
      this.schedule = null;
      return;
    }
    if (n.value.atMs < this.now) throw new Error(`scheduled seal at ${n.value.atMs} is before ${this.now}: seals must come in time order`);
    this.q.push(n.value.atMs, { t: 'scheduled', seal: n.value });
  }

  private handle(item: Item): void {
    switch (item.t) {
      case 'deliver':
        // A merge's preparation and commit scan the store as it is when they end.
        if (this.cfg.scanOnPrepare && scans(item.event)) return this.feed({ ...item.event, scan: this.scan() });
        return this.feed(item.event);
      case 'timer':
        if (item.token === this.timerToken) this.feed({ type: 'timer' });
        return;
      case 'seal':
        return this.seal(item.proc, item.shard);
      case 'scheduled':
        this.sealOne(item.seal.shard, item.seal.bytes);
        return this.nextScheduled();
      case 'optimize': {
        const cls = this.state.policy.classes.optimize;
        this.feed({ type: 'bump', bump: { target: { kind: 'optimize' }, class: cls, reason: 'sim: optimize requested', expiresAtMs: this.now } });
        this.q.push(this.now + this.cfg.optimizeEverySecs! * 1000, { t: 'optimize' });
        return;
      }
      case 'operator': {
        const o = this.cfg.operator![item.index]!;
        return this.feed(typeof o.event === 'function' ? o.event(this.now, this.state) : o.event);
      }
      case 'sample':
        this.result.samples.push({ atMs: this.now, backlog: backlogOf(this.state), writePressure: this.state.writePressure, turn: this.state.turn?.unitId ?? null });
        this.q.push(this.now + this.cfg.sampleEveryMs!, { t: 'sample' });
        return;
    }
  }

  private seal(proc: number, shard: string): void {
    const p: ArrivalProcess = this.cfg.arrivals![proc]!;
    if (p.stopMs !== undefined && this.now >= p.stopMs) return;
    this.sealOne(shard, p.bytesPerGeneration, p);
    this.q.push(this.now + Math.max(1, draw(this.rng, p.everyMs)), { t: 'seal', proc, shard });
  }

  /** A generation of `shard` sealed now; its demand is delivered as `p` says (scheduled seals: at once). */
  private sealOne(shard: string, bytes: number | undefined, p?: ArrivalProcess): void {
    const seq = (this.sealed[shard] ?? 0) + 1;
    this.sealed[shard] = seq;
    const revision = ++this.revision;
    this.sealRevision[shard] = revision;
    const event: PolicyEvent = { type: 'demand', shard, sealedThroughSeq: seq, revision, ...(bytes !== undefined ? { bytes } : {}) };
    const lost = chance(this.rng, p?.lostProb);
    this.cfg.onSeal?.({ shard, seq, atMs: this.now, lost });
    if (!lost) {
      this.q.push(this.now + draw(this.rng, p?.deliveryDelayMs ?? 0), { t: 'deliver', event });
      if (chance(this.rng, p?.duplicateProb)) this.q.push(this.now + draw(this.rng, [0, 60_000]), { t: 'deliver', event });
    }
  }

  private feed(event: PolicyEvent): void {
    const before = this.state;
    const r = step(before, event, this.now);
    this.state = r.state;
    this.steps++;
    this.closeTurn(event);
    this.cfg.onStep?.({ nowMs: this.now, event, before, after: r.state, decisions: r.decisions });
    for (const d of r.decisions) this.execute(d);
  }

  private closeTurn(event: PolicyEvent): void {
    if (event.type !== 'committed' && event.type !== 'commitFailed') return;
    const rec = this.openTurns.get(event.unitId);
    if (!rec) return;
    rec.releasedAtMs = this.now;
    rec.committed = event.type === 'committed';
    this.openTurns.delete(event.unitId);
  }

  private later(ms: number, event: PolicyEvent): void {
    this.q.push(this.now + Math.max(0, ms), { t: 'deliver', event });
  }

  private execute(d: Decision): void {
    switch (d.type) {
      case 'prepare':
        return this.prepare(d.unit);
      case 'commit':
        return this.commit(d.unit, d.why, d.riders ?? []);
      case 'snapshot': {
        // The scan sees the store as it is when it starts; its answer may be stale by the
        // time it arrives, which is exactly what revisions guard against.
        const ms = draw(this.rng, this.cfg.snapshotMs ?? 500);
        if (chance(this.rng, this.cfg.snapshotFailProb)) return this.later(ms, { type: 'snapshotFailed', error: 'sim: scan failed' });
        return this.later(ms, { type: 'snapshot', ...this.scan() });
      }
      case 'wakeAt':
        this.timerToken++;
        if (d.atMs !== null) {
          if (d.atMs <= this.now) throw new Error(`core asked for a timer in the past (${d.atMs} <= ${this.now})`);
          this.q.push(d.atMs, { t: 'timer', token: this.timerToken });
        }
        return;
    }
  }

  /** The store as a scan sees it now. */
  private scan(): StoreScan {
    const shards = Object.keys(this.sealed).map((shard) => ({ shard, sealedThroughSeq: this.sealed[shard]!, revision: this.sealRevision[shard]! }));
    return { revision: this.revision, shards };
  }

  private failure(f: FaultRates | undefined): { error: string; retryable: boolean; stalled: boolean } | null {
    if (chance(this.rng, f?.fatal)) return { error: 'sim: corrupt input', retryable: false, stalled: false };
    if (chance(this.rng, f?.retryable)) {
      const stalled = chance(this.rng, f?.stalled);
      return { error: stalled ? 'sim: stalled (no progress)' : 'sim: transient error', retryable: true, stalled };
    }
    return null;
  }

  private attempts(f: FaultRates | undefined): number {
    return chance(this.rng, f?.retriedAttempts) ? 2 : 1;
  }

  private prepare(u: Unit): void {
    const generations = u.kind === 'merge' ? u.toSeq - u.fromSeq + 1 : 0;
    const model = this.cfg.activities;
    const ms = model
      ? model.durationMs({ phase: 'prepare', kind: u.kind, generations, atMs: this.now }, this.rng)
      : draw(this.rng, this.cfg.prepareMs[u.kind]) + generations * (this.cfg.mergeMsPerGeneration ?? 0);
    const fail = this.failure(this.cfg.prepareFaults);
    if (fail) return this.later(ms, { type: 'prepareFailed', unitId: u.id, ...fail });
    const needsCommit = u.kind === 'merge' || chance(this.rng, model ? model.needsCommit(u.kind, this.now) : (this.cfg.needsCommit?.[u.kind] ?? 1));
    const rows = u.kind === 'merge' ? (u.toSeq - u.fromSeq + 1) * this.rowsPerGeneration() : 0;
    const base = { type: 'prepared' as const, unitId: u.id, needsCommit, reservedBytes: rows * 100, attempts: this.attempts(this.cfg.prepareFaults) };
    // Only a merge's result matters to the simulation (its rows); plans stay null.
    this.later(
      ms,
      u.kind === 'merge'
        ? { ...base, kind: 'merge', prepared: { shard: u.shard, fromSeq: u.fromSeq, toSeq: u.toSeq, preparedPath: null, rows, bytes: rows * 100, attempt: 1, resumedFromFile: 0, resumedVia: null } }
        : { ...base, kind: u.kind, prepared: null },
    );
  }

  private rowsPerGeneration(): number {
    return this.cfg.arrivals?.[0]?.rowsPerGeneration ?? 1000;
  }

  private commit(u: Unit, why: string, riders: readonly Unit[]): void {
    this.openTurns.set(u.id, { unitId: u.id, kind: u.kind as Kind, readySinceMs: u.readySinceMs ?? this.now, grantedAtMs: this.now, releasedAtMs: null, committed: null, why });
    this.result.turns.push(this.openTurns.get(u.id)!);
    const model = this.cfg.activities;
    const generations = u.kind === 'merge' ? u.toSeq - u.fromSeq + 1 : 0;
    const commitMs = (kind: Kind, gens: number) => (model ? model.durationMs({ phase: 'commit', kind, generations: gens, atMs: this.now }, this.rng) : draw(this.rng, this.cfg.commitMs[kind]));
    let ms = commitMs(u.kind, generations);
    const fail = this.failure(this.cfg.commitFaults);
    if (fail) return this.later(ms, { type: 'commitFailed', unitId: u.id, ...fail });
    const rows = u.kind === 'merge' ? (u.prepared?.rows ?? 0) : 0;
    // Maintenance riding the turn (src/policy/rides.ts) runs inside it, after the upsert:
    // it takes what its own commit would, and the turn ends after it.
    const maintained: Maintained = {};
    for (const r of riders) {
      if (!r.rider || !isRidingKind(r.kind)) continue;
      const riderMs = commitMs(r.kind, 0);
      maintained[r.kind] = { ms: riderMs, rows: 0 };
      ms += riderMs;
    }
    this.later(ms, { type: 'committed', unitId: u.id, version: ++this.version, rows, attempts: 1, ...(Object.keys(maintained).length ? { maintained } : {}) });
  }
}

const scans = (e: PolicyEvent): e is Extract<PolicyEvent, { type: 'prepared' | 'committed' }> =>
  (e.type === 'prepared' && e.kind === 'merge') || (e.type === 'committed' && e.unitId.startsWith('merge/'));

export function runSimulation(cfg: SimConfig): SimResult {
  return new Simulation(cfg).run();
}
