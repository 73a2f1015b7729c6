import type { z } from 'zod';
import { cloneState } from '../policy/clone';
import { applyEvent } from '../policy/events';
import { factsOf, refuseAwaitMerged, refuseBump, refuseDemand, refusePause, refuseResume } from '../policy/request-checks';
import type { PolicyEvent, TableState } from '../policy/types';
import { awaitMergedSchema, bumpSchema, demandSchema, demandsSchema, pauseSchema } from './payload-schemas';
import { formatZodError } from '../util/zod-format';

// What the table workflow does with a signal's or an update's raw payload: check its
// shape (src/messages/payload-schemas.ts), then check it against the table (src/policy/request-checks.ts), and turn
// what passes into policy events. Pure and total: any JSON value goes in, nothing is
// thrown (a throw in a signal handler would fail the workflow task over and over), which
// test/policy/fuzz.test.ts checks with arbitrary input.

export type SignalName = 'demand' | 'demands' | 'bump' | 'pause' | 'resume';

export interface CheckedSignal {
  events: PolicyEvent[];
  /** One line per dropped payload (or demand entry): why. */
  rejected: string[];
}

const shapeError = <T>(r: z.SafeParseReturnType<unknown, T>, name: string): string | null => (r.success ? null : `${name}: ${formatZodError(r.error)}`);

/**
 * The table as operator signals see it: signals that arrived in the same activation are
 * queued but not yet applied, so a pause followed at once by a resume is judged after
 * the pause.
 */
function withPending(state: TableState, pending: readonly PolicyEvent[], nowMs: number): TableState {
  const ops = pending.filter((e) => e.type === 'pause' || e.type === 'resume');
  if (ops.length === 0) return state;
  const s = cloneState(state);
  for (const e of ops) applyEvent(s, e, nowMs);
  return s;
}

/** `pending`: events queued in this activation and not yet applied. */
export function checkSignal(
  state: TableState,
  name: SignalName,
  raw: unknown,
  nowMs: number,
  opts: { pending?: readonly PolicyEvent[] } = {},
): CheckedSignal {
  try {
    const seen = name === 'pause' || name === 'resume' ? withPending(state, opts.pending ?? [], nowMs) : state;
    return checkUnsafe(seen, name, raw, nowMs);
  } catch (e) {
    // The schemas are total, so this is a bug; still, a signal must never throw.
    return { events: [], rejected: [`${name}: ${e instanceof Error ? e.message : String(e)}`] };
  }
}

function checkUnsafe(state: TableState, name: SignalName, raw: unknown, nowMs: number): CheckedSignal {
  const facts = factsOf(state);
  const refuse = (why: string | null): string | null => (why !== null ? `${name}: ${why}` : null);
  const one = (ev: PolicyEvent, why: string | null): CheckedSignal => {
    const r = refuse(why);
    return r === null ? { events: [ev], rejected: [] } : { events: [], rejected: [r] };
  };
  switch (name) {
    case 'demand': {
      const r = demandSchema.safeParse(raw);
      if (!r.success) return { events: [], rejected: [shapeError(r, name)!] };
      return one({ type: 'demand', ...r.data }, refuseDemand(facts, r.data));
    }
    case 'demands': {
      const r = demandsSchema.safeParse(raw);
      if (!r.success) return { events: [], rejected: [shapeError(r, name)!] };
      const out: CheckedSignal = { events: [], rejected: [] };
      // Entries are judged one by one: one bad shard does not drop the others' demand.
      for (const d of r.data) {
        const why = refuse(refuseDemand(facts, d));
        if (why === null) out.events.push({ type: 'demand', ...d });
        else out.rejected.push(why);
      }
      return out;
    }
    case 'bump': {
      const r = bumpSchema.safeParse(raw);
      if (!r.success) return { events: [], rejected: [shapeError(r, name)!] };
      const b = r.data;
      const target = b.kind ? { kind: b.kind } : { unitId: b.unitId! };
      return one({ type: 'bump', bump: { target, class: b.class, reason: b.reason, expiresAtMs: nowMs + b.forSecs * 1000 } }, refuseBump(facts, b));
    }
    case 'pause':
    case 'resume': {
      const r = pauseSchema.safeParse(raw ?? {});
      if (!r.success) return { events: [], rejected: [shapeError(r, name)!] };
      const why = name === 'pause' ? refusePause(facts, r.data.kind) : refuseResume(facts, r.data.kind);
      return one({ type: name, kind: r.data.kind }, why);
    }
  }
}

/** An awaitMerged request, checked in the update's validator: null, or why it is refused. */
export function checkAwaitMerged(state: TableState, raw: unknown): string | null {
  try {
    const r = awaitMergedSchema.safeParse(raw);
    if (!r.success) return `awaitMerged: ${formatZodError(r.error)}`;
    const why = refuseAwaitMerged(factsOf(state), r.data);
    return why === null ? null : `awaitMerged: ${why}`;
  } catch (e) {
    return `awaitMerged: ${e instanceof Error ? e.message : String(e)}`;
  }
}
