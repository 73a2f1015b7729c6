import { describe, expect, it } from 'vitest';
import { preparedUnitOf, withPreparationProgress } from '../../src/client/preparation-progress';
import type { PreparingEntry } from '../../src/policy/status';
import { formatStatus } from '../../src/cli/format-status';

const entry = (unitId: string, kind: PreparingEntry['kind']): PreparingEntry => ({ unitId, kind, reservedBytes: 0, phase: null });

describe('joining heartbeats into status', () => {
  it('reads the unit from a preparation activity id, and nothing from other ids', () => {
    expect(preparedUnitOf('prepare merge/s0 1-3')).toBe('merge/s0');
    expect(preparedUnitOf('prepare optimize')).toBe('optimize');
    expect(preparedUnitOf('commit merge/s0 1-3')).toBeNull();
    expect(preparedUnitOf('7')).toBeNull();
  });

  it('fills phase, progress, attempt and heartbeat age of the matching unit only', () => {
    const view = { preparing: [entry('merge/s0', 'merge'), entry('merge/s1', 'merge'), entry('optimize', 'optimize')] };
    const out = withPreparationProgress(
      view,
      [
        { activityId: 'prepare merge/s0 4-9', details: { phase: 'read', filesRead: 3, rowsRead: 900 }, attempt: 2, lastHeartbeatMs: 8_500 },
        { activityId: 'commit merge/s1 1-2', details: { phase: 'commit', step: 'mergeInsert' }, attempt: 1, lastHeartbeatMs: 9_000 },
        { activityId: 'prepare optimize', details: null, attempt: 1, lastHeartbeatMs: null },
      ],
      10_000,
    );
    expect(out.preparing).toEqual([
      { ...view.preparing[0], phase: 'read', progress: { phase: 'read', filesRead: 3, rowsRead: 900 }, attempt: 2, heartbeatAgeSecs: 1.5 },
      view.preparing[1],
      { ...view.preparing[2], phase: null, progress: null, attempt: 1, heartbeatAgeSecs: null },
    ]);
    expect(view.preparing[0]!.phase).toBeNull();
  });

  it('ignores a phase it does not know', () => {
    const out = withPreparationProgress({ preparing: [entry('gc', 'gc')] }, [{ activityId: 'prepare gc', details: { phase: 'dance' }, attempt: 1, lastHeartbeatMs: 0 }], 0);
    expect(out.preparing[0]!.phase).toBeNull();
  });

  it('the human status prints the counters and the retry', () => {
    const s = {
      table: 't', version: 3, paused: false, pausedKinds: [], writePressure: 0, backlog: 1,
      shards: [], turn: null, queue: [],
      preparing: [{ ...entry('merge/s0', 'merge'), phase: 'read' as const, progress: { phase: 'read', filesRead: 3, rowsRead: 900 }, attempt: 2, heartbeatAgeSecs: 1.2 }],
      counters: { turns: { merge: 0, optimize: 0, index: 0, gc: 0 }, stalls: 1, retries: 1, maxTurnWaitSecs: { merge: 0, optimize: 0, index: 0, gc: 0 }, merges: 0, rowsMerged: 0 },
    };
    expect(formatStatus(s as unknown as Parameters<typeof formatStatus>[0])).toContain('merge/s0 read: filesRead 3, rowsRead 900 (attempt 2, heartbeat 1.2 s ago)');
  });
});
