import { KINDS, type Kind, type PerKind } from '../policy/types';
import type { SimResult } from './types';

export interface SimSummary {
  simulatedSecs: number;
  turns: PerKind<number>;
  turnShare: PerKind<number>;
  /** Max wait from commit-ready to the turn, per kind, seconds (as the core counted it). */
  maxWaitSecs: PerKind<number>;
  backlog: { atSecs: number; backlog: number; writePressure: number }[];
  merges: number;
  rowsMerged: number;
  stalls: number;
  retries: number;
}

export function summarize(r: SimResult, startMs = 0): SimSummary {
  const turns = { ...r.state.counters.turns };
  const total = KINDS.reduce((s, k) => s + turns[k], 0);
  const share = Object.fromEntries(KINDS.map((k: Kind) => [k, total === 0 ? 0 : turns[k] / total])) as PerKind<number>;
  return {
    simulatedSecs: (r.nowMs - startMs) / 1000,
    turns,
    turnShare: share,
    maxWaitSecs: { ...r.state.counters.maxTurnWaitSecs },
    backlog: r.samples.map((s) => ({ atSecs: (s.atMs - startMs) / 1000, backlog: s.backlog, writePressure: s.writePressure })),
    merges: r.state.counters.merges,
    rowsMerged: r.state.counters.rowsMerged,
    stalls: r.state.counters.stalls,
    retries: r.state.counters.retries,
  };
}

const pad = (s: string, n: number): string => s.padEnd(n);

export function formatSummary(s: SimSummary): string {
  const lines: string[] = [];
  lines.push(`simulated ${(s.simulatedSecs / 60).toFixed(1)} min; merges ${s.merges}, rows merged ${s.rowsMerged}, stalls ${s.stalls}, retries ${s.retries}`);
  lines.push('');
  lines.push(`${pad('kind', 10)}${pad('turns', 8)}${pad('share', 9)}max wait (s)`);
  for (const k of KINDS) {
    lines.push(`${pad(k, 10)}${pad(String(s.turns[k]), 8)}${pad(`${(s.turnShare[k] * 100).toFixed(1)}%`, 9)}${s.maxWaitSecs[k].toFixed(1)}`);
  }
  lines.push('');
  lines.push(`${pad('t (min)', 10)}${pad('backlog', 10)}writePressure`);
  for (const b of s.backlog) lines.push(`${pad((b.atSecs / 60).toFixed(0), 10)}${pad(String(b.backlog), 10)}${b.writePressure.toFixed(3)}`);
  return lines.join('\n');
}
