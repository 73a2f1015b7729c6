import type { UnitCost } from './unit-results';
import { KINDS, type Kind, type PerKind } from './types';

// The table's maintenance history with its cost, for `turnstile history`: every unit
// that ran (one entry per turn, and one per preparation that found nothing to commit),
// when, with what outcome, why it was chosen, rows changed, bytes read and written, CPU
// and reserved bytes. Bounded per kind (merges are many, the others few and telling);
// the totals count everything ever recorded, so write amplification and the
// bytes-rewritten metrics stay exact when entries go. Pure, plain JSON, carried across
// continue-as-new.

/** shadow: an adopted table's decision in shadow mode, recorded and not carried out. */
export type UnitOutcome = 'committed' | 'nothing to do' | 'failed' | 'stalled' | 'no headroom' | 'shadow';

export interface UnitHistoryEntry {
  unitId: string;
  kind: Kind;
  /** Merges: the shard and generations (of the lead unit; riders are named below). */
  shard?: string;
  fromSeq?: number;
  toSeq?: number;
  /** When its preparation started (or its turn, for a unit with no preparation). */
  startedAtMs: number;
  /** When it became commit-ready and when it got the turn (absent: it never took one). */
  readyAtMs?: number;
  grantedAtMs?: number;
  endedAtMs: number;
  outcome: UnitOutcome;
  /** Why it won the turn (the core's reason), or what the preparation found. */
  why: string;
  error?: string;
  /** Rows the commit changed (merges: rows merged; gc: files deleted; index: table rows). */
  rows: number;
  /** Preparation and commit together; absent parts count 0 (workers that did not measure). */
  bytesRead: number;
  bytesWritten: number;
  cpuMs: number;
  /** Worker memory the commit reserved. */
  reservedBytes: number;
  /** Merges of other shards committed in the same turn (their cost is in this entry). */
  riders?: string[];
}

export interface KindTotals {
  units: number;
  bytesRead: number;
  bytesWritten: number;
  cpuMs: number;
}

export interface UnitHistory {
  /** When recording began (the table's creation, or the first run of a release that records). */
  sinceMs: number;
  entries: UnitHistoryEntry[];
  totals: PerKind<KindTotals>;
  /** Bytes writers reported for the generations they sealed (the denominator of write amplification). */
  sealedBytes: number;
}

export const MAX_ENTRIES: PerKind<number> = { merge: 100, optimize: 30, index: 30, gc: 30 };

const zeroTotals = (): KindTotals => ({ units: 0, bytesRead: 0, bytesWritten: 0, cpuMs: 0 });

export const emptyHistory = (nowMs: number): UnitHistory => ({
  sinceMs: nowMs,
  entries: [],
  totals: { merge: zeroTotals(), optimize: zeroTotals(), index: zeroTotals(), gc: zeroTotals() },
  sealedBytes: 0,
});

export const addCosts = (a: UnitCost | undefined, b: UnitCost | undefined): UnitCost => ({
  bytesRead: (a?.bytesRead ?? 0) + (b?.bytesRead ?? 0),
  bytesWritten: (a?.bytesWritten ?? 0) + (b?.bytesWritten ?? 0),
  cpuMs: (a?.cpuMs ?? 0) + (b?.cpuMs ?? 0),
});

/** The history with these entries added (oldest dropped per kind) and `sealedBytes` more sealed. */
export function recordUnits(h: UnitHistory, added: readonly UnitHistoryEntry[], sealedBytes = 0): UnitHistory {
  if (added.length === 0 && sealedBytes === 0) return h;
  const totals = { ...h.totals };
  for (const e of added) {
    const t = totals[e.kind];
    totals[e.kind] = { units: t.units + 1, bytesRead: t.bytesRead + e.bytesRead, bytesWritten: t.bytesWritten + e.bytesWritten, cpuMs: t.cpuMs + e.cpuMs };
  }
  const all = [...h.entries, ...added];
  const keep: PerKind<number> = { ...MAX_ENTRIES };
  const entries: UnitHistoryEntry[] = [];
  for (let i = all.length - 1; i >= 0; i--) {
    const e = all[i]!;
    if (keep[e.kind]-- > 0) entries.push(e);
  }
  return { ...h, entries: entries.reverse(), totals, sealedBytes: h.sealedBytes + sealedBytes };
}

/** Bytes written to the table by all units per byte sealed by writers; null before anything was sealed. */
export function writeAmplification(h: UnitHistory): number | null {
  if (h.sealedBytes <= 0) return null;
  return KINDS.reduce((s, k) => s + h.totals[k].bytesWritten, 0) / h.sealedBytes;
}
