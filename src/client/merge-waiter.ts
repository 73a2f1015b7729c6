import { status as grpcStatus } from '@grpc/grpc-js';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { workflowIdForTable } from '../messages/names';
import { formatZodError } from '../util/zod-format';
import { awaitMergedSchema, type AwaitMergedResult } from '../messages/payload-schemas';
import * as msg from '../../workflows/messages';
import { anyCause, retryWhileBusy } from './busy-retry';
import { RequestRefusedError } from './refused';
import { sleep } from '../util/sleep';

/** Asks while a run closes for continue-as-new: 100 x 100 ms, far more than a new run takes to start. */
const RUN_ENDING_RETRIES = 100;

/**
 * The server's answer for an update delivered in a workflow task that then failed on
 * the server's side, e.g. a task completing with continue-as-new while new signals came
 * in (the server fails such a task and schedules another): the update was never
 * accepted, so it had no effect, and the server does not retry it itself (gRPC
 * FAILED_PRECONDITION, "unexpected workflow task failure"). Seen under load with
 * frequent continue-as-new (test/integration/scheduler.test.ts).
 */
export function isUpdateAbortedByTaskFailure(e: unknown): boolean {
  return anyCause(e, (err) => err.code === grpcStatus.FAILED_PRECONDITION && typeof err.message === 'string' && /unexpected workflow task failure/i.test(err.message));
}

// Read-your-merges without polling. Temporal allows only 10 updates in flight per
// workflow, so one process coalesces its waits: per (table, shard) there is at most one
// awaitMerged update in flight, for the highest seq anyone asked for; each answer
// resolves every waiter it covers.

interface Waiter {
  seq: number;
  resolve: (r: AwaitMergedResult) => void;
  reject: (e: unknown) => void;
}

export class MergeWaiter {
  private readonly waiting = new Map<string, Waiter[]>();
  private readonly inFlight = new Set<string>();
  /** Most awaitMerged updates this process had in flight at once (for operators and tests). */
  maxInFlight = 0;

  constructor(private readonly client: Client) {}

  wait(table: string, shard: string, seq: number): Promise<AwaitMergedResult> {
    const r = awaitMergedSchema.safeParse({ shard, seq });
    if (!r.success) return Promise.reject(new RequestRefusedError(`wait-merged: ${formatZodError(r.error)}`));
    const key = `${table}\u0000${shard}`;
    return new Promise((resolve, reject) => {
      const list = this.waiting.get(key) ?? [];
      list.push({ seq, resolve, reject });
      this.waiting.set(key, list);
      void this.pump(table, shard, key);
    });
  }

  /**
   * One awaitMerged update. The run answers within a bound (merged=false: not yet), and
   * pump() asks again. Across continue-as-new the run answers merged=false, and the
   * handle follows the workflow id to the new run, so asking again is enough; an update
   * that reaches the old run just as it closes fails with "workflow execution already
   * completed" before the new run exists, so that one is asked again too (for a while),
   * and so is one the server aborted unapplied with its workflow task (see above);
   * awaitMerged only reads, so asking again is always safe.
   */
  private async ask(table: string, shard: string, seq: number): Promise<AwaitMergedResult> {
    for (let attempt = 1; ; attempt++) {
      try {
        // Waiting for a free update slot has no deadline here: the caller's own timeout ends the wait.
        return await retryWhileBusy(() => this.client.workflow.getHandle(workflowIdForTable(table)).executeUpdate(msg.awaitMerged, { args: [{ shard, seq }] }), Infinity);
      } catch (e) {
        const runEnding = e instanceof WorkflowNotFoundError && /already completed/i.test(e.message);
        if (!(runEnding || isUpdateAbortedByTaskFailure(e)) || attempt >= RUN_ENDING_RETRIES) throw e;
        await sleep(100);
      }
    }
  }

  private async pump(table: string, shard: string, key: string): Promise<void> {
    if (this.inFlight.has(key)) return;
    this.inFlight.add(key);
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight.size);
    try {
      for (;;) {
        const list = this.waiting.get(key) ?? [];
        if (list.length === 0) return;
        const target = Math.max(...list.map((w) => w.seq));
        let res: AwaitMergedResult;
        try {
          res = await this.ask(table, shard, target);
        } catch (e) {
          this.waiting.delete(key);
          for (const w of list) w.reject(e);
          return;
        }
        // merged=false: not merged within the run's bound, or the run is draining for
        // continue-as-new (a short pause lets it finish); ask again.
        if (!res.merged && res.mergedThroughSeq < target) await sleep(100);
        const remaining = (this.waiting.get(key) ?? []).filter((w) => {
          if (res.mergedThroughSeq >= w.seq) {
            w.resolve({ ...res, seq: w.seq, merged: true });
            return false;
          }
          return true;
        });
        this.waiting.set(key, remaining);
      }
    } finally {
      this.inFlight.delete(key);
    }
  }
}
