import type { PreparingEntry, StatusView } from '../policy/status';
import type { Phase } from '../policy/types';

// The workflow never sees heartbeats (Temporal keeps them on the pending activity), so
// the phase and counters of each preparation are joined in on the client side, from
// describe(). Activity ids name their unit: "prepare merge/s0 1-3" (run-unit.ts).

export interface PendingActivity {
  activityId: string;
  /** The last heartbeat's first argument, decoded. */
  details: unknown;
  attempt: number;
  lastHeartbeatMs: number | null;
  /** false while it sits in the task queue: no worker has taken it (none has headroom). */
  started?: boolean;
  /** The identity of the worker that last took it. */
  worker?: string | null;
}

const PHASES: readonly Phase[] = ['read', 'encode', 'commit'];

/** The unit a preparation activity works for, or null for any other activity. */
export function preparedUnitOf(activityId: string): string | null {
  const m = /^prepare (\S+)/.exec(activityId);
  return m ? m[1]! : null;
}

export function withPreparationProgress<V extends Pick<StatusView, 'preparing'>>(view: V, pending: PendingActivity[], nowMs: number): V {
  const byUnit = new Map<string, PendingActivity>();
  for (const p of pending) {
    const unit = preparedUnitOf(p.activityId);
    if (unit) byUnit.set(unit, p);
  }
  const preparing = view.preparing.map((entry): PreparingEntry => {
    const p = byUnit.get(entry.unitId);
    if (!p) return entry;
    const details = p.details && typeof p.details === 'object' ? (p.details as Record<string, unknown>) : null;
    const phase = PHASES.find((ph) => ph === details?.phase) ?? null;
    return {
      ...entry,
      phase,
      progress: details,
      attempt: p.attempt,
      heartbeatAgeSecs: p.lastHeartbeatMs === null ? null : Math.max(0, nowMs - p.lastHeartbeatMs) / 1000,
      ...(p.started === false ? { queued: true } : {}),
      ...(p.worker && p.started !== false ? { worker: p.worker } : {}),
    };
  });
  return { ...view, preparing };
}
