import type { DemandRecord } from '../policy/demand-record';
import { backlogOf } from '../policy/pressure';
import { KINDS, type Kind, type PerKind, type Policy } from '../policy/types';
import { recordedActivities, REPLAY_DEFAULTS, type DurationSources } from './recorded-durations';
import { observedIn, recordedIn, replayShards, replayWindow, sealSchedule, type Observed, type Recorded, type ReplayWindow } from './replay';
import { runSimulation } from './simulator';
import type { TurnRecord } from './types';

// `turnstile policy NAME --set FILE --dry-run`: the table's recorded window replayed
// through the simulator (and so through the real core, step()) under its current
// policy and under a proposed one, with what was observed beside them. Pure.

/**
 * Seeds per policy. The durations are drawn, so one run can be an unlucky draw: five
 * runs, reported as median and max, show the spread without making the command slow
 * (a run costs about one core step per seal, turn and timer). Both policies run with
 * the same seeds, so their difference is not noise of different draws.
 */
export const DRY_RUN_SEEDS = [1, 2, 3, 4, 5] as const;

/** How long after the window a replay may run to drain what was sealed in it. */
export const DRAIN_LIMIT_MS = 6 * 3_600_000;

export interface RunMetrics {
  /** Turns granted within the window, per kind (a grouped merge commit is one). */
  turns: PerKind<number>;
  /** Waits from commit-ready to the turn, seconds, of those turns; null: no turn of that kind. */
  maxWaitSecs: PerKind<number | null>;
  p99WaitSecs: PerKind<number | null>;
  meanWaitSecs: PerKind<number | null>;
  backlogPeak: number;
  writePressurePeak: number;
  /**
   * From the end of the window until every generation sealed in it is merged, seconds: 0
   * when the backlog was already 0 then; null when it did not drain within DRAIN_LIMIT_MS.
   */
  drainSecs: number | null;
}

/** One policy over every seed: each metric's median and max over the seeds. */
export interface PolicyRuns {
  policy: Policy;
  runs: RunMetrics[];
  median: RunMetrics;
  max: RunMetrics;
}

export interface PolicyChange {
  key: string;
  from: unknown;
  to: unknown;
}

export interface DryRunReport {
  table: string;
  hours: number;
  window: { fromMs: number; toMs: number; startMs: number; buckets: number };
  recorded: Recorded;
  observed: Observed;
  durations: DurationSources;
  seeds: number[];
  drainLimitSecs: number;
  changed: PolicyChange[];
  current: PolicyRuns;
  proposed: PolicyRuns;
}

export interface DryRunInput {
  table: string;
  /** The table's shards now (state query). */
  shards: string[];
  current: Policy;
  proposed: Policy;
  record: DemandRecord;
  nowMs: number;
  hours: number;
  seeds?: readonly number[];
  /** Called before each simulated run (it is synchronous and may take seconds on a busy table). */
  onRun?: (run: { policy: 'current' | 'proposed'; seed: number; index: number; total: number }) => void;
}

const perKind = <T>(f: (k: Kind) => T): PerKind<T> => Object.fromEntries(KINDS.map((k) => [k, f(k)])) as PerKind<T>;

/** Nearest-rank percentile of sorted values. */
const percentile = (sorted: readonly number[], p: number): number => sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;

function waitStats(turns: readonly TurnRecord[]): Pick<RunMetrics, 'turns' | 'maxWaitSecs' | 'p99WaitSecs' | 'meanWaitSecs'> {
  const waits = perKind((k) =>
    turns
      .filter((t) => t.kind === k)
      .map((t) => (t.grantedAtMs - t.readySinceMs) / 1000)
      .sort((a, b) => a - b),
  );
  return {
    turns: perKind((k) => waits[k].length),
    maxWaitSecs: perKind((k) => (waits[k].length ? waits[k][waits[k].length - 1]! : null)),
    p99WaitSecs: perKind((k) => (waits[k].length ? percentile(waits[k], 99) : null)),
    meanWaitSecs: perKind((k) => (waits[k].length ? waits[k].reduce((s, x) => s + x, 0) / waits[k].length : null)),
  };
}

function runOnce(input: DryRunInput, w: ReplayWindow, policy: Policy, seed: number): RunMetrics {
  // A managed table always has shards; the fallbacks only keep a bare record replayable.
  const named = input.shards.length ? input.shards : replayShards(w, []);
  const tableShards = named.length ? named : ['s0'];
  const shards = replayShards(w, tableShards);
  const { model } = recordedActivities(w.buckets);
  let backlogPeak = 0;
  let writePressurePeak = 0;
  // Since when the backlog has been 0 (the run starts with nothing to merge).
  let drainedAtMs: number | null = w.startMs;
  const r = runSimulation({
    table: input.table,
    shards,
    policy,
    seed,
    startMs: w.startMs,
    endMs: w.toMs + DRAIN_LIMIT_MS,
    prepareMs: REPLAY_DEFAULTS.prepare,
    commitMs: REPLAY_DEFAULTS.commit,
    seals: sealSchedule(w, tableShards),
    activities: model,
    // As the real merge preparations and commits do (activities/prepare-merge.ts, commit-merge.ts).
    scanOnPrepare: true,
    onStep: ({ after, nowMs }) => {
      const backlog = backlogOf(after);
      backlogPeak = Math.max(backlogPeak, backlog);
      writePressurePeak = Math.max(writePressurePeak, after.writePressure);
      if (backlog > 0) drainedAtMs = null;
      else drainedAtMs ??= nowMs;
    },
    stopWhen: (state, nowMs, sim) => sim.arrivalsDone && nowMs >= w.toMs && backlogOf(state) === 0,
  });
  const drained = backlogOf(r.state) === 0 ? drainedAtMs : null;
  return {
    ...waitStats(r.turns.filter((t) => t.grantedAtMs < w.toMs)),
    backlogPeak,
    writePressurePeak,
    drainSecs: drained === null ? null : Math.max(0, drained - w.toMs) / 1000,
  };
}

/** The median (lower middle for an even count) and max of values where null sorts last: "did not drain" is worse than any drain time. */
function spread(values: readonly (number | null)[]): { median: number | null; max: number | null } {
  const sorted = [...values].sort((a, b) => (a === null ? (b === null ? 0 : 1) : b === null ? -1 : a - b));
  return { median: sorted[Math.floor((sorted.length - 1) / 2)] ?? null, max: sorted[sorted.length - 1] ?? null };
}

/** Waits are null when a run had no turn of the kind: those runs say nothing about the wait, so they are left out. */
function spreadOfPresent(values: readonly (number | null)[]): { median: number | null; max: number | null } {
  const present = values.filter((v): v is number => v !== null);
  return present.length ? spread(present) : { median: null, max: null };
}

function aggregate(policy: Policy, runs: RunMetrics[]): PolicyRuns {
  const pick = (which: 'median' | 'max'): RunMetrics => {
    const wait = (f: (r: RunMetrics) => PerKind<number | null>) => perKind((k) => spreadOfPresent(runs.map((r) => f(r)[k]))[which]);
    return {
      turns: perKind((k) => spread(runs.map((r) => r.turns[k]))[which] ?? 0),
      maxWaitSecs: wait((r) => r.maxWaitSecs),
      p99WaitSecs: wait((r) => r.p99WaitSecs),
      meanWaitSecs: wait((r) => r.meanWaitSecs),
      backlogPeak: spread(runs.map((r) => r.backlogPeak))[which] ?? 0,
      writePressurePeak: spread(runs.map((r) => r.writePressurePeak))[which] ?? 0,
      drainSecs: spread(runs.map((r) => r.drainSecs))[which] ?? null,
    };
  };
  return { policy, runs, median: pick('median'), max: pick('max') };
}

/** The keys whose values differ, per-kind maps key by key ("maxTurnWaitSecs.merge"). */
export function policyChanges(from: Policy, to: Policy): PolicyChange[] {
  const out: PolicyChange[] = [];
  const keys = [...new Set([...Object.keys(from), ...Object.keys(to)])] as (keyof Policy)[];
  for (const key of keys) {
    const a: unknown = from[key];
    const b: unknown = to[key];
    if (a && b && typeof a === 'object' && typeof b === 'object') {
      const sub = [...new Set([...Object.keys(a), ...Object.keys(b)])];
      for (const k of sub) {
        const x = (a as Record<string, unknown>)[k];
        const y = (b as Record<string, unknown>)[k];
        if (JSON.stringify(x) !== JSON.stringify(y)) out.push({ key: `${key}.${k}`, from: x, to: y });
      }
    } else if (JSON.stringify(a) !== JSON.stringify(b)) out.push({ key, from: a, to: b });
  }
  return out;
}

/** null when the window holds no recorded demand (no bucket overlaps it). */
export function policyDryRun(input: DryRunInput): DryRunReport | null {
  const w = replayWindow(input.record, input.nowMs, input.hours);
  if (w.buckets.length === 0) return null;
  const seeds = [...(input.seeds ?? DRY_RUN_SEEDS)];
  const changed = policyChanges(input.current, input.proposed);
  const total = changed.length ? 2 * seeds.length : seeds.length;
  const runs = (which: 'current' | 'proposed', offset: number) =>
    aggregate(
      input[which],
      seeds.map((seed, i) => {
        input.onRun?.({ policy: which, seed, index: offset + i, total });
        return runOnce(input, w, input[which], seed);
      }),
    );
  const current = runs('current', 0);
  return {
    table: input.table,
    hours: input.hours,
    window: { fromMs: w.fromMs, toMs: w.toMs, startMs: w.startMs, buckets: w.buckets.length },
    recorded: recordedIn(w),
    observed: observedIn(w),
    durations: recordedActivities(w.buckets).sources,
    seeds,
    drainLimitSecs: DRAIN_LIMIT_MS / 1000,
    changed,
    current,
    // The same policy replays the same runs (the seeds are the same).
    proposed: changed.length ? runs('proposed', seeds.length) : { ...current, policy: input.proposed },
  };
}
