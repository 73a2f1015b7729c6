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
 */
export function recordSample(log: AdoptedLog, obs: Observation, ours = false): AdoptedLog {
  const last = log.samples[log.samples.length - 1];
  if (last && last.version === obs.version && last.fragments === obs.fragments) return log;
  const s: TableSample = { atMs: obs.atMs, version: obs.version, fragments: obs.fragments, smallFragments: obs.smallFragments, rows: obs.rows, bytes: obs.bytes, ...(ours ? { ours: true as const } : {}) };
  let samples = [...log.samples, s];
  if (samples.length > MAX_SAMPLES) {
    const half = Math.floor(samples.length / 2);
    samples = [...samples.slice(0, half).filter((_, i) => i % 2 === 0), ...samples.slice(half)];
  }
  return { ...log, samples };
}

/**
 * Compactions someone else ran: looks between which the fragment count fell by two or
 * more (writers only ever add fragments; an update that empties one removes one at
 * most) where the later look is not the one a commit of Turnstile's took as it ended.
 */
export function outsideCompactions(log: AdoptedLog): { atMs: number; fragmentsBefore: number; fragmentsAfter: number }[] {
  const out: { atMs: number; fragmentsBefore: number; fragmentsAfter: number }[] = [];
  for (let i = 1; i < log.samples.length; i++) {
    const a = log.samples[i - 1]!;
    const b = log.samples[i]!;
    if (a.fragments - b.fragments < 2 || b.ours) continue;
    out.push({ atMs: b.atMs, fragmentsBefore: a.fragments, fragmentsAfter: b.fragments });
  }
  return out;
}
