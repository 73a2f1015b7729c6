import type { ActivitySlotInfo, CustomSlotSupplier, SlotPermit, WorkerTuner } from '@temporalio/worker';
import type { MemoryLedger } from './memory-ledger';

// How a worker stops taking work it has no memory for (invariant 6). Before
// each activity-task poll the SDK asks this supplier for a slot; the slot is granted
// only with a poll claim of `claimBytes` (the largest reservation any unit can have,
// see activities/memory-reservations.ts) held in the worker's ledger. So a worker polls only
// while it has headroom for whatever the poll may bring, and the task it gets always
// fits: the unit converts the claim into its own, smaller, reservation at once. A unit
// that no worker has headroom for stays in Temporal's task queue, costs nothing while
// it waits (no retry, no turn held by a preparation) and is taken by the first worker,
// any of them, whose running units end. Activity types are all on one queue, so the
// small ones (snapshot, plans) wait for headroom too; they reserve a small fixed size.

/** Claims are all the same size; a permit names the claim it holds. */
interface ClaimPermit extends SlotPermit {
  claim: string;
  /** Taken for an eager task (tryReserveSlot), not for a poll. */
  eager?: true;
}

/** A counting gate for the slot limit (maxConcurrentActivities), in arrival order. */
class Slots {
  private free: number;
  private readonly queue: (() => void)[] = [];

  constructor(n: number) {
    this.free = n;
  }

  /** A slot now or none, ahead of nobody waiting. */
  tryTake(): boolean {
    if (this.free <= 0 || this.queue.length > 0) return false;
    this.free--;
    return true;
  }

  async take(signal: AbortSignal): Promise<void> {
    if (signal.aborted) throw signal.reason;
    if (this.tryTake()) return;
    await new Promise<void>((resolve, reject) => {
      const grant = () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        const i = this.queue.indexOf(grant);
        if (i >= 0) this.queue.splice(i, 1);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.queue.push(grant);
    });
  }

  give(): void {
    const next = this.queue.shift();
    if (next) next();
    else this.free++;
  }
}

export function memorySlotSupplier(ledger: MemoryLedger, opts: { claimBytes: () => number; maxSlots: number }): CustomSlotSupplier<ActivitySlotInfo> {
  const slots = new Slots(opts.maxSlots);
  return {
    type: 'custom',
    async reserveSlot(_ctx, abortSignal): Promise<SlotPermit> {
      await slots.take(abortSignal);
      try {
        const claim = await ledger.claim(Math.min(opts.claimBytes(), ledger.budgetBytes), abortSignal);
        return { claim } satisfies ClaimPermit;
      } catch (e) {
        slots.give();
        throw e;
      }
    },
    // Eager activity tasks (the server hands an activity a workflow task just scheduled
    // back with the task's completion, skipping the task queue) get a slot and a claim
    // only when both are free at once: the SDK may not wait here.
    tryReserveSlot() {
      ledger.eager.asked++;
      if (!slots.tryTake()) return null;
      const claim = ledger.tryClaim(Math.min(opts.claimBytes(), ledger.budgetBytes));
      if (claim === null) {
        slots.give();
        return null;
      }
      ledger.eager.granted++;
      return { claim, eager: true } satisfies ClaimPermit;
    },
    markSlotUsed(ctx) {
      const permit = ctx.permit as ClaimPermit;
      if (permit.eager) ledger.eager.used++;
      ledger.markClaimUsed(permit.claim);
    },
    releaseSlot(ctx) {
      // A claim a unit converted is already gone; the unit releases its own reservation.
      ledger.release((ctx.permit as ClaimPermit).claim);
      slots.give();
    },
  };
}

/** The worker's tuner: SDK default sizes for everything but activities, which go by memory. */
export function memoryTuner(ledger: MemoryLedger, opts: { claimBytes: () => number; maxSlots: number }): WorkerTuner {
  return {
    workflowTaskSlotSupplier: { type: 'fixed-size', numSlots: 40 },
    activityTaskSlotSupplier: memorySlotSupplier(ledger, opts),
    localActivityTaskSlotSupplier: { type: 'fixed-size', numSlots: 100 },
    nexusTaskSlotSupplier: { type: 'fixed-size', numSlots: 100 },
  };
}
