import { describe, expect, test } from 'vitest';
import { deliversEvents, writesEvent } from '../../workflows/command-every-task';

// The rule on its own (pure): which activations delivered history events, and which
// command lists write a history event. The real thing: replays of runs under load
// (test/integration/hot-merger.test.ts, test/cluster/faults.test.ts) and the scan of
// their histories for tasks a replay would merge (test/support/replay-merges.ts).

const job = (variant: string) => ({ [variant]: {} }) as never;

describe('deliversEvents', () => {
  test('signals, activity and timer outcomes and the start come from history events', () => {
    for (const v of ['signalWorkflow', 'resolveActivity', 'fireTimer', 'initializeWorkflow', 'cancelWorkflow']) expect(deliversEvents([job(v)])).toBe(true);
  });
  test('queries, updates, patch notices and evictions do not', () => {
    expect(deliversEvents([job('queryWorkflow')])).toBe(false);
    expect(deliversEvents([job('doUpdate'), job('doUpdate')])).toBe(false);
    expect(deliversEvents([job('notifyHasPatch'), job('updateRandomSeed'), job('removeFromCache')])).toBe(false);
    expect(deliversEvents([])).toBe(false);
  });
  test('one event among updates is enough', () => {
    expect(deliversEvents([job('doUpdate'), job('signalWorkflow')])).toBe(true);
  });
});

describe('writesEvent', () => {
  test('an activity, a search attribute or memo upsert, an accepted or completed update write an event', () => {
    expect(writesEvent([{ scheduleActivity: { seq: 1 } }])).toBe(true);
    expect(writesEvent([{ upsertWorkflowSearchAttributes: {} }])).toBe(true);
    expect(writesEvent([{ modifyWorkflowProperties: {} }])).toBe(true);
    expect(writesEvent([{ updateResponse: { protocolInstanceId: 'u', accepted: {} } }])).toBe(true);
    expect(writesEvent([{ updateResponse: { protocolInstanceId: 'u', completed: {} } }])).toBe(true);
    expect(writesEvent([{ continueAsNewWorkflowExecution: {} }])).toBe(true);
  });
  test('nothing, a rejected update, a query answer write none', () => {
    expect(writesEvent([])).toBe(false);
    expect(writesEvent([{ updateResponse: { protocolInstanceId: 'u', rejected: {} } }])).toBe(false);
    expect(writesEvent([{ respondToQuery: { queryId: 'q' } }])).toBe(false);
  });
  test('a timer started and cancelled in the same task writes none; either one alone writes one', () => {
    expect(writesEvent([{ startTimer: { seq: 3 } }, { cancelTimer: { seq: 3 } }])).toBe(false);
    expect(writesEvent([{ startTimer: { seq: 3 } }, { cancelTimer: { seq: 2 } }])).toBe(true);
    expect(writesEvent([{ startTimer: { seq: 4 } }])).toBe(true);
    expect(writesEvent([{ cancelTimer: { seq: 2 } }])).toBe(true);
  });
});
