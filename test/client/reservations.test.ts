import { describe, expect, it } from 'vitest';
import { withPreparationProgress } from '../../src/client/preparation-progress';
import { withReservations } from '../../src/client/reservations';
import { formatStatus } from '../../src/cli/format-status';
import { defaultPolicy } from '../../src/config/policy-schema';
import type { PreparingEntry } from '../../src/policy/status';
import type { StatusView } from '../../workflows/messages';
import type { WorkerRecord } from '../../src/worker/registry';
import { formatWorkers, workerRows } from '../../src/cli/workers-command';

// Status shows each preparing unit's reservation and worker, or that it
// waits in the task queue for headroom; `workers` lists what each worker holds.

const MiB = 2 ** 20;
const entry = (unitId: string): PreparingEntry => ({ unitId, kind: 'merge', reservedBytes: 0, phase: null });

const record = (identity: string, running: WorkerRecord['running']): WorkerRecord => ({
  identity,
  host: 'h',
  pid: 1,
  taskQueue: 'q',
  budgetBytes: 1024 * MiB,
  cacheBytes: 128 * MiB,
  reservedBytes: running.reduce((n, r) => n + r.bytes, 0),
  claimBytes: 512 * MiB,
  running,
  waiting: 0,
  startedAtMs: 0,
  lastSeenMs: 1000,
});

describe('reservations in status and workers', () => {
  const records = [
    record('1@h', [
      { id: 'a', bytes: 380 * MiB, activity: 'prepareMerge', unit: 't: prepare merge/s0 1-4', sinceMs: 0 },
      { id: 'claim-3', bytes: 512 * MiB, activity: 'poll', sinceMs: 0 },
    ]),
  ];

  it('joins the running unit with its reservation and worker; a queued one waits for a claim of headroom', () => {
    const view = { table: 't', preparing: [entry('merge/s0'), entry('merge/s0@5'), entry('merge/s1')] };
    const pending = [
      { activityId: 'prepare merge/s0 1-4', details: { phase: 'read', filesRead: 1, rowsRead: 10 }, attempt: 1, lastHeartbeatMs: 0, started: true, worker: '1@h' },
      { activityId: 'prepare merge/s1 1-2', details: null, attempt: 1, lastHeartbeatMs: null, started: false, worker: null },
    ];
    const out = withReservations(withPreparationProgress(view, pending, 0), records);
    expect(out.preparing[0]).toMatchObject({ unitId: 'merge/s0', reservedBytes: 380 * MiB, worker: '1@h' });
    expect(out.preparing[1]).toEqual(entry('merge/s0@5')); // no activity yet, and not merge/s0's holding
    expect(out.preparing[2]).toMatchObject({ unitId: 'merge/s1', queued: true, waitingForBytes: 512 * MiB });
    const text = formatStatus({ ...minimalView(), preparing: out.preparing });
    expect(text).toContain('merge/s0 read: filesRead 1, rowsRead 10 (heartbeat 0.0 s ago), reserved 380 MiB on 1@h');
    expect(text).toContain('merge/s1 waiting for 512 MiB of headroom (in the task queue, no worker has taken it)');
  });

  it('workers: reserved bytes count units and the prepared cache, not poll claims', () => {
    const rows = workerRows(records, 3000);
    expect(rows[0]).toMatchObject({ identity: '1@h', budgetBytes: 1024 * MiB, reservedBytes: 508 * MiB, headroomBytes: 516 * MiB, pollClaims: 1, unmarkedTakes: 0, eager: { asked: 0, granted: 0, used: 0 }, lastSeenSecs: 2 });
    expect(rows[0]!.running).toEqual([{ unit: 't: prepare merge/s0 1-4', activity: 'prepareMerge', reservedBytes: 380 * MiB, sinceSecs: 3 }]);
    expect(rows[0]!.buildId).toBeNull();
    expect(formatWorkers(rows)).toContain('1@h  host h pid 1  build unversioned  budget 1024 MiB  reserved 508 MiB');
    expect(formatWorkers(workerRows([{ ...records[0]!, buildId: '0.2.0-abc' }], 3000))).toContain('pid 1  build 0.2.0-abc  budget');
    expect(formatWorkers([])).toMatch(/^no live workers/);
  });
});

function minimalView(): StatusView {
  return {
    table: 't',
    version: 1,
    paused: false,
    pausedKinds: [],
    writePressure: 0,
    backlog: 0,
    shards: [],
    turn: null,
    preparing: [],
    queue: [],
    counters: { turns: { merge: 0, optimize: 0, index: 0, gc: 0 }, stalls: 0, retries: 0, maxTurnWaitSecs: { merge: 0, optimize: 0, index: 0, gc: 0 }, merges: 0, rowsMerged: 0 },
    snapshot: { everySecs: 10, running: false, nextInSecs: 1 },
    stalledUnits: [],
    pressure: { writePressure: 0, backlog: 0, hardBacklog: 1, maxWriteDelayMs: 0 },
    policy: defaultPolicy(),
  };
}
