import { describe, expect, it } from 'vitest';
import { isQueryTimeout, isTaskFailedState, retryQuery, retryWhileBusy } from '../../src/client/busy-retry';

// Refusals a waiter asks again after: the update limit, and a workflow whose last task
// failed (the shape the cluster fault tests met: a ServiceError caused by gRPC code 9).
const taskFailed = () => Object.assign(new Error('Workflow Update failed'), { cause: Object.assign(new Error('9 FAILED_PRECONDITION: Unable to perform workflow execution update due to Workflow Task in failed state.'), { code: 9, details: 'Unable to perform workflow execution update due to Workflow Task in failed state.' }) });
const otherPrecondition = () => Object.assign(new Error('Workflow Update failed'), { cause: Object.assign(new Error('9 FAILED_PRECONDITION: workflow execution already completed'), { code: 9 }) });

describe('retryWhileBusy', () => {
  it('asks again while the workflow task is in failed state, then returns the answer', async () => {
    let calls = 0;
    const r = await retryWhileBusy(async () => {
      if (++calls < 3) throw taskFailed();
      return 'merged';
    });
    expect(r).toBe('merged');
    expect(calls).toBe(3);
    expect(isTaskFailedState(taskFailed())).toBe(true);
  });

  it('does not retry other refusals', async () => {
    let calls = 0;
    await expect(
      retryWhileBusy(async () => {
        calls++;
        throw otherPrecondition();
      }),
    ).rejects.toThrow('Workflow Update failed');
    expect(calls).toBe(1);
    expect(isTaskFailedState(otherPrecondition())).toBe(false);
  });
});

// What the frontend answers when no worker answered a query within the history call's
// deadline (the CI failure of a status query after a gc turn), and what grpc-js says
// when the caller's own deadline ran out (a writer's 2 s pressure query): only the first
// is asked again.
const queryTimedOut = () => Object.assign(new Error('Failed to query Workflow'), { cause: Object.assign(new Error('4 DEADLINE_EXCEEDED: query timed out before a worker could process it'), { code: 4, details: 'query timed out before a worker could process it' }) });
const ownDeadline = () => Object.assign(new Error('Failed to query Workflow'), { cause: Object.assign(new Error('4 DEADLINE_EXCEEDED: Deadline exceeded after 2.001s'), { code: 4 }) });

describe('retryQuery', () => {
  it('asks a query again after the server timed it out, then returns the answer', async () => {
    let calls = 0;
    const r = await retryQuery(async () => {
      if (++calls < 3) throw queryTimedOut();
      return 'state';
    });
    expect(r).toBe('state');
    expect(calls).toBe(3);
  });

  it('does not ask again when the caller\'s own deadline ran out, nor after its budget', async () => {
    let calls = 0;
    await expect(retryQuery(async () => (calls++, Promise.reject(ownDeadline())))).rejects.toThrow('Failed to query Workflow');
    expect(calls).toBe(1);
    expect(isQueryTimeout(ownDeadline())).toBe(false);
    calls = 0;
    await expect(retryQuery(async () => (calls++, Promise.reject(queryTimedOut())), 2500)).rejects.toThrow('Failed to query Workflow');
    expect(calls).toBe(2); // a 1 s pause, then 2 s would pass the 2.5 s budget
  });
});
