import { status } from '@grpc/grpc-js';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { isUpdateAbortedByTaskFailure } from '../../src/client/merge-waiter';

// The one server answer, besides "run completed", after which the MergeWaiter asks its
// read-only awaitMerged again: the update was aborted, unapplied, with a workflow task
// that failed on the server (reproduced under load by scheduler.test.ts's continue-as-new test).

const grpc = (code: number, details: string) => Object.assign(new Error(`${code} ${details}`), { code, details });

describe('isUpdateAbortedByTaskFailure', () => {
  it('recognises the server error, also as the cause of the SDK error', () => {
    const raw = grpc(status.FAILED_PRECONDITION, 'FAILED_PRECONDITION: Unable to perform workflow execution update due to unexpected workflow task failure.');
    expect(isUpdateAbortedByTaskFailure(raw)).toBe(true);
    const wrapped = Object.assign(new Error('Workflow Update failed'), { cause: raw });
    expect(isUpdateAbortedByTaskFailure(wrapped)).toBe(true);
  });

  it('leaves every other failure to the caller', () => {
    expect(isUpdateAbortedByTaskFailure(grpc(status.FAILED_PRECONDITION, 'FAILED_PRECONDITION: something else'))).toBe(false);
    expect(isUpdateAbortedByTaskFailure(grpc(status.UNAVAILABLE, 'UNAVAILABLE: unexpected workflow task failure'))).toBe(false);
    expect(isUpdateAbortedByTaskFailure(new WorkflowUpdateFailedError('Workflow Update failed', undefined))).toBe(false);
    expect(isUpdateAbortedByTaskFailure(undefined)).toBe(false);
  });
});
