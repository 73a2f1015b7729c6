import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { expect, inject, test } from 'vitest';
import { formatReport, measureIdleCost, MODES, type Mode } from '../../bench/idle-cost-measure';
import { connectClient } from '../../src/client/connect';
import { uniqueName } from '../support/harness';

// A tiny run of bench/idle-cost.ts against the test server, so the bench cannot rot:
// the report has its shape, its numbers are the tables' real histories, and with short
// periods the "before" tables really do more than the "after" ones in a few seconds.

const E = temporal.api.enums.v1.EventType;
const PERIODS = { optimize: 2, index: 2, gc: 2 };
const FAST: Mode[] = [
  { name: 'before', label: 'fixed 1 s scan, periodic kinds always due', policy: { snapshotIntervalSecs: 1, snapshotMaxIntervalSecs: 1, periodicWhenIdle: true, periodSecs: PERIODS } },
  { name: 'after', label: 'scan backs off from 1 s to 30 s, periodic kinds after a change', policy: { snapshotIntervalSecs: 1, snapshotMaxIntervalSecs: 30, periodSecs: PERIODS } },
  { name: 'written', label: 'as after, one generation sealed and merged at creation', policy: { snapshotIntervalSecs: 1, snapshotMaxIntervalSecs: 30, periodSecs: PERIODS }, writeOnce: true },
];

test('bench/idle-cost: a small run reports per-table-hour costs counted from the real histories', async () => {
  expect(MODES.map((m) => m.name)).toEqual(['before', 'after', 'written']);
  const address = inject('temporalAddress');
  const dataRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-idle-bench-'));
  const client = await connectClient({ address, namespace: 'default' });
  try {
    const report = await measureIdleCost({ address, dataRoot, taskQueue: uniqueName('tq-idle-bench'), tablesPerMode: 2, seconds: 10, modes: FAST, sweepSecs: 1 });
    expect(report.modes.map((m) => [m.mode, m.tables])).toEqual([['before', 2], ['after', 2], ['written', 2]]);
    const [before, after, written] = report.modes as [(typeof report.modes)[0], (typeof report.modes)[0], (typeof report.modes)[0]];

    for (const m of report.modes) {
      expect(m.tableHours).toBeGreaterThan(0);
      expect(m.perTableHour.events).toBeCloseTo(m.events / m.tableHours, 6);
      expect(m.perTableHour.workflowTasks).toBeCloseTo(m.workflowTasks / m.tableHours, 6);
      expect(m.activities.snapshot).toBeGreaterThanOrEqual(m.tables);
      // Each count is that table's history up to the end of the run, recounted here.
      for (const [i, id] of m.workflowIds.entries()) {
        const events = (await client.workflow.getHandle(id).fetchHistory()).events ?? [];
        const atMs = (e: (typeof events)[number]) => Number(e.eventTime!.seconds) * 1000 + Math.floor((e.eventTime!.nanos ?? 0) / 1e6);
        const upToEnd = events.filter((e) => atMs(e) <= report.endMs);
        expect(upToEnd.length).toBeGreaterThan(10);
        expect(m.eventsPerTable[i]).toBe(upToEnd.length);
        expect(events.at(-1)?.eventType).toBe(E.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED);
      }
      expect(m.events).toBe(m.eventsPerTable.reduce((a, b) => a + b, 0));
    }
    // The difference the bench is about, in counts: one scan a second and plans every
    // period, against two scans (at start and 1 s after nothing) and no plans at all.
    expect(before.activities.snapshot!).toBeGreaterThan(after.activities.snapshot!);
    expect(before.activities.planOptimize ?? 0).toBeGreaterThanOrEqual(2);
    expect(Object.keys(after.activities)).toEqual(['snapshot']);
    expect(before.workflowTasks).toBeGreaterThan(after.workflowTasks);
    // The written tables merged their generation; a sweep every second left the idle ones alone.
    expect((written.activities.commitMerge ?? 0) + (written.activities.prepareMerge ?? 0)).toBeGreaterThanOrEqual(written.tables);
    for (const id of after.workflowIds) {
      const signals = ((await client.workflow.getHandle(id).fetchHistory()).events ?? []).filter((e) => e.eventType === E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED);
      expect(signals).toEqual([]);
    }

    const text = formatReport(report);
    for (const row of ['history events', 'workflow tasks', 'activity snapshot', 'before / after', 'written']) expect(text).toContain(row);
  } finally {
    await client.connection.close();
    fs.rmSync(dataRoot, { recursive: true, force: true });
  }
}, 120_000);
