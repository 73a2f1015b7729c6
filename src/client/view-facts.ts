import type { TableFacts } from '../policy/request-checks';
import type { StatusView } from '../../workflows/messages';

/**
 * The table checks' facts (src/policy/request-checks.ts) from the `state` query's view, so a
 * client judges a request the way the workflow will. Unit ids are those the view shows:
 * the turn and its riders, preparing and queued units.
 */
export function factsOfView(v: StatusView): TableFacts {
  const unitIds = new Set<string>([...(v.turn ? [v.turn.unitId, ...(v.turn.riders ?? [])] : []), ...v.preparing.map((u) => u.unitId), ...v.queue.map((q) => q.unitId)]);
  return {
    table: v.table,
    shards: v.shards,
    paused: v.paused,
    pausedKinds: v.pausedKinds,
    unitIds: [...unitIds],
    hardBacklog: v.policy.hardBacklog,
  };
}
