import { fmix32, fnv, FNV_OFFSET } from '../util/hash32';
import { NEVER } from './time';

/**
 * Where in its first period a new table's periodic kind first falls due, in (0, 1]: a
 * hash of the table's name and the kind. Tables created together (a fleet brought up at
 * once, a bench) would otherwise all optimize in the same second every period, and their
 * merges would queue behind that wave (1,000 tables: seal -> merged p99 8-12 s in those
 * minutes against 1-2 s between them). Each later run is due a period after the last one
 * finished, so the phase carries on. A hash, not a random draw, so a table recreated
 * under its name keeps its phase and tests can predict it.
 */
export function firstPhase(table: string, kind: string): number {
  return 1 - fmix32(fnv(FNV_OFFSET, `${kind}\u0000${table}`)) / 2 ** 32;
}

/** The first due time of a periodic kind of a new table; 0 seconds means only on demand. */
export const firstDueMs = (nowMs: number, periodSecs: number, phase: number): number =>
  periodSecs > 0 ? nowMs + Math.ceil(periodSecs * 1000 * phase) : NEVER;
