import type { DryRunReport, RunMetrics } from '../sim/dry-run';
import { KINDS, type Kind, type PerKind } from '../policy/types';

// The text of `turnstile policy NAME --set FILE --dry-run`: what was observed beside the
// simulation of the current and of the proposed policy, within 100 columns. Pure.

export const noDemandLine = (hours: number): string => `no recorded demand in the last ${hours} hour${hours === 1 ? '' : 's'}`;

const LABEL = 14;
const KIND = 10;
const OBSERVED = 12;
const SIMULATED = 22;

const clock = (ms: number): string => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');

/** A wait in seconds: 2 decimals under 1 s (direct merges wait milliseconds), 1 under 100 s. */
function secs(s: number | null): string {
  if (s === null) return '-';
  return s < 1 ? s.toFixed(2) : s < 100 ? s.toFixed(1) : String(Math.round(s));
}

/** A span: 45 s, 12.5 min, 3.2 h. */
function span(s: number): string {
  if (s < 120) return `${Math.round(s)} s`;
  if (s < 7200) return `${+(s / 60).toFixed(1)} min`;
  return `${+(s / 3600).toFixed(1)} h`;
}

function size(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let v = bytes;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

const count = (n: number): string => n.toLocaleString('en-US');

export function formatDryRun(r: DryRunReport): string {
  const { recorded: rec, observed: obs, window: w } = r;
  const drain = (s: number | null): string => (s === null ? `> ${span(r.drainLimitSecs)}` : span(s));
  const cell = (f: (m: RunMetrics) => string, runs: DryRunReport['current']): string => `${f(runs.median)} (${f(runs.max)})`;
  const row = (label: string, kind: string, observed: string, f: (m: RunMetrics) => string): string =>
    `${label.padEnd(LABEL)}${kind.padEnd(KIND)}${observed.padStart(OBSERVED)}${cell(f, r.current).padStart(SIMULATED)}${cell(f, r.proposed).padStart(SIMULATED)}`;
  // Kinds with no turn in any column say nothing; they are left out.
  const kinds = KINDS.filter((k) => obs.turns[k] > 0 || r.current.max.turns[k] > 0 || r.proposed.max.turns[k] > 0);
  const perKind = (label: string, observed: (k: Kind) => string, pick: (m: RunMetrics) => PerKind<number | null>, fmt: (v: number | null) => string): string[] =>
    kinds.map((k, i) => row(i === 0 ? label : '', k, observed(k), (m) => fmt(pick(m)[k])));

  const buckets = rec.bucketSecs.min === rec.bucketSecs.max ? span(rec.bucketSecs.min) : `${span(rec.bucketSecs.min)} to ${span(rec.bucketSecs.max)}`;
  const lines = [
    `policy dry run of ${r.table}: ${clock(w.startMs)} .. ${clock(w.toMs)} UTC`,
    `  the last ${r.hours} h${w.startMs < w.fromMs ? ' and the rest of its first bucket' : ''}; ${w.buckets} bucket${w.buckets === 1 ? '' : 's'} of ${buckets}`,
    `recorded: ${count(rec.seals)} seals${rec.seals && rec.sealedBytes ? ` (${size(rec.sealedBytes / rec.seals)} each on average)` : ''}, ` +
      `${count(rec.mergePreparations)} merge preparations over ${count(rec.preparedGenerations)} generations`,
    `simulated: ${r.seeds.length} seeds per policy through the core; cells: median (max) over the seeds`,
    `proposed: ${r.changed.length ? r.changed.map((c) => `${c.key} ${JSON.stringify(c.from)} -> ${JSON.stringify(c.to)}`).join(', ') : 'no change from the current policy'}`,
    '',
    `${''.padEnd(LABEL + KIND)}${'observed'.padStart(OBSERVED)}${'current policy'.padStart(SIMULATED)}${'proposed policy'.padStart(SIMULATED)}`,
    ...perKind('turns', (k) => count(obs.turns[k]), (m) => m.turns, (v) => count(v ?? 0)),
    ...perKind('max wait s', (k) => secs(obs.maxWaitSecs[k]), (m) => m.maxWaitSecs, secs),
    ...perKind('p99 wait s', () => '-', (m) => m.p99WaitSecs, secs),
    ...perKind('mean wait s', (k) => secs(obs.meanWaitSecs[k]), (m) => m.meanWaitSecs, secs),
    row('backlog peak', '', obs.backlogPeak === null ? '-' : count(obs.backlogPeak), (m) => count(m.backlogPeak)),
    row('pressure peak', '', obs.writePressurePeak === null ? '-' : obs.writePressurePeak.toFixed(2), (m) => m.writePressurePeak.toFixed(2)),
    row('time to drain', '', '-', (m) => drain(m.drainSecs)),
    '',
    `time to drain: from the end of the window until every generation sealed in it is merged`,
    `  (> ${span(r.drainLimitSecs)}: not within ${span(r.drainLimitSecs)}). Waits and turns count turns granted within the window.`,
  ];
  // A kind never prepared commits nothing in the replay, so its durations do not matter.
  const relevant = (k: Kind): boolean => !r.durations.neverPrepared.includes(k);
  const defaulted = [
    ...r.durations.defaulted.prepare.filter(relevant).map((k) => `${k} preparation`),
    ...r.durations.defaulted.commit.filter(relevant).map((k) => `${k} commit`),
  ];
  if (defaulted.length) lines.push(`no durations recorded for: ${defaulted.join(', ')}; simulator defaults used`);
  if (r.durations.neverPrepared.length) lines.push(`never prepared in the window, so taken to find nothing to commit: ${r.durations.neverPrepared.join(', ')}`);
  lines.push('not modelled: other tables competing for workers, worker memory admission, failures and', '  retries, writers slowed or refused by pressure, operator pauses and bumps (docs/operations.md)');
  return lines.join('\n');
}
