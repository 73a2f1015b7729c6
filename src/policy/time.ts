// Time helpers. The state is plain JSON, so "never" cannot be Infinity (JSON turns it
// into null); the largest safe integer is far enough in the future and survives a
// round trip.

export const NEVER = Number.MAX_SAFE_INTEGER;

/** Next due time of something that repeats every periodSecs; 0 means only on demand. */
export const nextDueMs = (nowMs: number, periodSecs: number): number =>
  periodSecs > 0 ? nowMs + periodSecs * 1000 : NEVER;

/** Seconds with one decimal, for reasons and status. */
export const fmtSecs = (ms: number): string => String(Math.round(ms / 100) / 10);

/** Byte order, not locale order: the same on every worker, so replay stays deterministic. */
export const byName = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
