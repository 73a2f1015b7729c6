import type { Observation, PeriodicKind } from './types';

// What an adopted table's workflow remembers for `shadow-report`: the maintenance it
// decided on (carried out in active mode, only recorded in shadow mode) and how the
// table itself moved between looks. Bounded, plain JSON, carried across continue-as-new.

export interface MaintenanceDecision {
  atMs: number;
  kind: PeriodicKind;
  /** Why the unit won the turn ("class 3, aged ..."). */
  why: string;
  /** What its plan found ("40 small fragments of 41"). */
  reason: string;
  /** Estimated bytes the commit rewrites (compaction: the small fragments' share of the data). */
  predictedBytes: number;
  /** The table as last seen when it was decided. */
  version: number;
  fragments: number;
  /** False in shadow mode: decided and recorded, not committed. */
  carriedOut: boolean;
}

/** The table as one look found it; `ours`: the look a commit of Turnstile's took when it ended. */
export type TableSample = Pick<Observation, 'atMs' | 'version' | 'fragments' | 'smallFragments' | 'rows' | 'bytes'> & { ours?: true };

export interface AdoptedLog {
  /** When the log began (adoption, or a release that had none). */
  sinceMs: number;
  decisions: MaintenanceDecision[];
  /** Decisions ever made, per kind and whether carried out (the list above keeps only the last). */
  totals: { [K in PeriodicKind]: { decided: number; carriedOut: number } };
  samples: TableSample[];
  /** Compactions someone else ran, as the looks came (recordSample); absent: none yet. */
  outside?: OutsideCompaction[];
  outsideTotal?: number;
}

export interface OutsideCompaction {
  atMs: number;
  /** The version of the look that saw the fall. */
  version: number;
  fragmentsBefore: number;
  fragmentsAfter: number;
}

export const MAX_DECISIONS = 100;
export const MAX_SAMPLES = 240;

export const emptyLog = (nowMs: number): AdoptedLog => ({
  sinceMs: nowMs,
  decisions: [],
  totals: { optimize: { decided: 0, carriedOut: 0 }, index: { decided: 0, carriedOut: 0 }, gc: { decided: 0, carriedOut: 0 } },
  samples: [],
});

export function recordDecision(log: AdoptedLog, d: MaintenanceDecision): AdoptedLog {
  const t = log.totals[d.kind];
  return {
    ...log,
    decisions: [...log.decisions, d].slice(-MAX_DECISIONS),
    totals: { ...log.totals, [d.kind]: { decided: t.decided + 1, carriedOut: t.carriedOut + (d.carriedOut ? 1 : 0) } },
  };
}

/**
 * Keeps a look that changed something. When full, every other sample of the older half
 * is dropped, so the samples always span the whole time since adoption at a resolution
 * that halves as it ages, instead of only the last few minutes.
 *
 * Compactions someone else ran are counted here, as each look comes, not from the kept
 * samples (thinning would hide falls): a fall of two or more fragments since the last
 * look (writers only ever add fragments; an update that empties one removes one at
 * most) into a look that is not a commit of Turnstile's. `ours`: the look a commit of
 * Turnstile's took as it ended; with `sinceVersion` (the version when it was decided), a
 * fall another look saw in between, at a version after that, was this commit's and is
 * taken back. A look older than the last (it raced a commit) changes nothing.
 */
export function recordSample(log: AdoptedLog, obs: Observation, ours?: true | { sinceVersion: number }): AdoptedLog {
  const last = log.samples[log.samples.length - 1];
  if (last && (obs.version < last.version || (last.version === obs.version && last.fragments === obs.fragments))) {
    return ours && typeof ours === 'object' ? takeBack(log, ours.sinceVersion, obs.version) : log;
  }
  const s: TableSample = { atMs: obs.atMs, version: obs.version, fragments: obs.fragments, smallFragments: obs.smallFragments, rows: obs.rows, bytes: obs.bytes, ...(ours ? { ours: true as const } : {}) };
  let samples = [...log.samples, s];
  if (samples.length > MAX_SAMPLES) {
    const half = Math.floor(samples.length / 2);
    samples = [...samples.slice(0, half).filter((_, i) => i % 2 === 0), ...samples.slice(half)];
  }
  let next: AdoptedLog = { ...log, samples };
  if (last && !ours && last.fragments - obs.fragments >= 2) {
    const fall: OutsideCompaction = { atMs: obs.atMs, version: obs.version, fragmentsBefore: last.fragments, fragmentsAfter: obs.fragments };
    next = { ...next, outside: [...(log.outside ?? []), fall].slice(-MAX_DECISIONS), outsideTotal: (log.outsideTotal ?? 0) + 1 };
  }
  return ours && typeof ours === 'object' ? takeBack(next, ours.sinceVersion, obs.version) : next;
}

/** Falls seen at versions in (since, upTo]: a commit of Turnstile's made them. */
function takeBack(log: AdoptedLog, since: number, upTo: number): AdoptedLog {
  const outside = log.outside ?? [];
  const kept = outside.filter((o) => o.version <= since || o.version > upTo);
  if (kept.length === outside.length) return log;
  return { ...log, outside: kept, outsideTotal: Math.max(0, (log.outsideTotal ?? 0) - (outside.length - kept.length)) };
}

/** Compactions someone else ran, the latest MAX_DECISIONS of them (outsideTotal counts all). */
export function outsideCompactions(log: AdoptedLog): { atMs: number; fragmentsBefore: number; fragmentsAfter: number }[] {
  return (log.outside ?? []).map(({ atMs, fragmentsBefore, fragmentsAfter }) => ({ atMs, fragmentsBefore, fragmentsAfter }));
}
