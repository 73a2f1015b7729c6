import { describe, expect, it } from 'vitest';
import { isTaskFailedState, retryWhileBusy } from '../../src/client/busy-retry';

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
