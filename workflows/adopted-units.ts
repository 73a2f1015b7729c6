import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import type { AdoptedPlan } from '../activities/adopted';
import { criteria } from '../src/policy/adopted';
import type { PeriodicUnit, PolicyEvent, TableState, Unit } from '../src/policy/types';
import { classify, commitActivities, commitBytes, commitSummary, costed, notTaken, planAging, scanAging } from './run-unit';

// The prepare and commit of an adopted table's units (the table workflow picks these
// when state.adopted is set): plans and commits act on the table at its URI, and every
// kind's plan is one activity. The plan is carried in the shape of its kind's prepared
// result, so the carried state reads the same for both kinds of table.

function preparedOf(kind: PeriodicUnit['kind'], p: AdoptedPlan): PeriodicUnit['prepared'] {
  switch (kind) {
    case 'optimize':
      return p;
    case 'index':
      return { missing: [], staleIndices: p.staleIndices, reason: p.reason } as PeriodicUnit['prepared'];
    case 'gc':
      return { files: [], tempFiles: [], versionsPastRetention: p.versionsPastRetention, reason: p.reason } as PeriodicUnit['prepared'];
  }
}

export async function prepareAdopted(st: TableState, unit: Unit): Promise<PolicyEvent> {
  if (!st.adopted || unit.kind === 'merge') return { type: 'prepareFailed', unitId: unit.id, error: `${unit.id}: not a unit of an adopted table`, retryable: false, stalled: false };
  const c = criteria(st.policy);
  try {
    const { uri } = st.adopted;
    const kind = unit.kind;
    const p = await planAging(st, unit, (acts) =>
      acts.planAdopted({
        table: st.table,
        uri,
        kind,
        retentionSecs: st.policy.retentionSecs,
        compactAtSmallFragments: c.compactAtSmallFragments,
        indexAtUnindexedShare: c.indexAtUnindexedShare,
        pruneAtVersions: c.pruneAtVersions,
      }),
    );
    return { type: 'prepared', kind: unit.kind, unitId: unit.id, needsCommit: p.needed, prepared: preparedOf(unit.kind, p), attempts: 1, ...costed(p.cost) } as PolicyEvent;
  } catch (err) {
    return { type: 'prepareFailed', unitId: unit.id, ...classify(err) };
  }
}

/** Conflicts a failed commit reported in its details (activities/adopted.ts). */
function conflictsOf(err: unknown): number {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (!(cause instanceof ApplicationFailure) || cause.type !== 'CommitConflict') return 0;
  const d = cause.details?.[0] as { conflicts?: unknown } | undefined;
  return typeof d?.conflicts === 'number' ? d.conflicts : 0;
}

export async function commitAdopted(st: TableState, unit: Unit, why: string): Promise<PolicyEvent> {
  if (!st.adopted || unit.kind === 'merge') return { type: 'commitFailed', unitId: unit.id, error: `${unit.id}: not a unit of an adopted table`, retryable: false, stalled: false };
  const c = criteria(st.policy);
  try {
    const r = await commitActivities(st, unit, commitSummary(unit, why)).commitAdopted({
      table: st.table,
      uri: st.adopted.uri,
      kind: unit.kind,
      retentionSecs: st.policy.retentionSecs,
      indexAtUnindexedShare: c.indexAtUnindexedShare,
      conflictRetries: c.conflictRetries,
      conflictBackoffMaxSecs: c.conflictBackoffMaxSecs,
    });
    return { type: 'committed', unitId: unit.id, version: r.version, rows: r.rows, attempts: 1, conflicts: r.conflicts, observation: r.observation, ...costed(r.cost) };
  } catch (err) {
    if (notTaken(err)) return { type: 'noHeadroom', unitId: unit.id, bytes: commitBytes(unit) };
    return { type: 'commitFailed', unitId: unit.id, ...classify(err), conflicts: conflictsOf(err) };
  }
}

export async function runObserve(st: TableState): Promise<PolicyEvent> {
  if (!st.adopted) return { type: 'observeFailed', error: 'not an adopted table' };
  const { uri } = st.adopted;
  try {
    return { type: 'observed', observation: await scanAging(st, (acts) => acts.observeTable({ table: st.table, uri })) };
  } catch (err) {
    return { type: 'observeFailed', error: classify(err).error };
  }
}
