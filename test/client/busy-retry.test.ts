import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { isQueryBufferFull, isQueryTimeout, isTaskFailedState, LIVE_POLL_MS, noLiveWorker, retryQuery, retryWhileBusy, STUCK_TASK_ATTEMPTS, stuckWorkflowTask } from '../../src/client/busy-retry';
import { QUERY_TAIL } from '../../src/messages/errors';

// Refusals a waiter asks again after: the update limit, and a workflow whose last task
// failed (the shape the cluster fault tests met: a ServiceError caused by gRPC code 9).
const taskFailed = () => Object.assign(new Error('Workflow Update failed'), { cause: Object.assign(new Error('9 FAILED_PRECONDITION: Unable to perform workflow execution update due to Workflow Task in failed state.'), { code: status.FAILED_PRECONDITION, details: 'Unable to perform workflow execution update due to Workflow Task in failed state.' }) });
const otherPrecondition = () => Object.assign(new Error('Workflow Update failed'), { cause: Object.assign(new Error('9 FAILED_PRECONDITION: workflow execution already completed'), { code: status.FAILED_PRECONDITION }) });

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
const queryTimedOut = () => Object.assign(new Error('Failed to query Workflow'), { cause: Object.assign(new Error('4 DEADLINE_EXCEEDED: query timed out before a worker could process it'), { code: status.DEADLINE_EXCEEDED, details: 'query timed out before a worker could process it' }) });
const ownDeadline = () => Object.assign(new Error('Failed to query Workflow'), { cause: Object.assign(new Error('4 DEADLINE_EXCEEDED: Deadline exceeded after 2.001s'), { code: status.DEADLINE_EXCEEDED }) });

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

  it('asks a query again after the table refused it for racing new events (the worker dropped its copy)', async () => {
    let calls = 0;
    const raced = new Error('Workflow activation completion failed', { cause: new Error(`${QUERY_TAIL}: events that came after the last workflow task reached this copy with a query`) });
    const r = await retryQuery(async () => {
      if (++calls < 2) throw raced;
      return 'state';
    });
    expect(r).toBe('state');
    expect(calls).toBe(2);
  });

  it('does not ask again when the caller\'s own deadline ran out, nor after its budget', async () => {
    let calls = 0;
    await expect(retryQuery(async () => (calls++, Promise.reject(ownDeadline())))).rejects.toThrow('Failed to query Workflow');
    expect(calls).toBe(1);
    expect(isQueryTimeout(ownDeadline())).toBe(false);
    calls = 0;
    await expect(retryQuery(async () => (calls++, Promise.reject(queryTimedOut())), { maxWaitMs: 2500 })).rejects.toThrow('Failed to query Workflow');
    expect(calls).toBe(2); // a 1 s pause, then 2 s would pass the 2.5 s budget
  });
});

describe('no live worker', () => {
  it('counts a worker as running while its last poll is at most LIVE_POLL_MS old', () => {
    const now = 1_000_000_000;
    expect(noLiveWorker('tq', [], now)).toMatch(/^no worker has polled task queue tq in the last 90 s/);
    expect(noLiveWorker('tq', [{ lastAccessMs: null }, { lastAccessMs: now - LIVE_POLL_MS - 1 }], now)).not.toBeNull();
    expect(noLiveWorker('tq', [{ lastAccessMs: now - LIVE_POLL_MS - 1 }, { lastAccessMs: now - LIVE_POLL_MS }], now)).toBeNull();
  });

  it('a timed-out query is not asked again when no worker runs, with the reason and the timeout as its cause', async () => {
    let calls = 0;
    const err = await retryQuery(async () => (calls++, Promise.reject(queryTimedOut())), { whyNot: async () => 'no worker has polled task queue tq' }).catch((e: Error) => e);
    expect(calls).toBe(1);
    expect((err as Error).message).toBe('no worker has polled task queue tq');
    expect(isQueryTimeout((err as Error).cause)).toBe(true);
    // The server's refusal of a second query while one already waits: the same check.
    const bufferFull = Object.assign(new Error('QueryWorkflow: consistent query buffer is full, this may be caused by too many queries and workflow not able to process query fast enough'), { code: status.RESOURCE_EXHAUSTED });
    expect(isQueryBufferFull(bufferFull)).toBe(true);
    await expect(retryQuery(async () => Promise.reject(bufferFull), { whyNot: async () => 'no worker has polled task queue tq' })).rejects.toThrow('no worker has polled task queue tq');
    // A live worker (null), or a check that itself failed: asked again.
    calls = 0;
    const answer = await retryQuery(async () => (++calls < 2 ? Promise.reject(queryTimedOut()) : 'state'), { whyNot: async () => Promise.reject(new Error('describe failed')) });
    expect([answer, calls]).toEqual(['state', 2]);
  });
});

describe('stuckWorkflowTask', () => {
  it('names a task that failed on its last attempts, not one failed once or twice, nor none pending', () => {
    expect(stuckWorkflowTask('orders', null)).toBeNull();
    expect(stuckWorkflowTask('orders', { attempt: 1 })).toBeNull();
    expect(stuckWorkflowTask('orders', { attempt: STUCK_TASK_ATTEMPTS - 1 })).toBeNull();
    const why = stuckWorkflowTask('orders', { attempt: STUCK_TASK_ATTEMPTS + 2 });
    expect(why).toMatch(new RegExp(`^table orders: its workflow task failed ${STUCK_TASK_ATTEMPTS + 1} times in a row, `));
    expect(why).toContain('turnstile table reset');
  });
});
