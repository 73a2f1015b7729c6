import os from 'node:os';
import type { WorkerTuner } from '@temporalio/worker';
import type { AdmissionDeps } from '../../activities/deps';
import { maxUnitBytes } from '../../activities/memory-reservations';
import { preparedCacheBytes } from './reservation-sizes';
import { MemoryLedger } from './memory-ledger';
import { memoryTuner } from './memory-slots';
import { liveRecords, RECORD_EVERY_MS, removeRecord, writeRecord, type WorkerRecord } from './registry';

// One worker process's side of admission by reserved bytes: its ledger, the
// tuner that polls only with headroom, what its activities reserve through, and its
// record in the fleet registry (which also tells it the fleet's smallest budget, from
// which batch and claim sizes follow).

const CHANGE_WRITE_MS = 100;

export interface FleetMemory {
  budgetBytes: number;
  /** Part of the budget held for the prepared-batch cache; units share the rest. */
  cacheBytes: number;
  ledger: MemoryLedger;
  tuner: WorkerTuner;
  admission: AdmissionDeps;
  claimBytes(): number;
  /** Starts refreshing this worker's registry record; the returned function stops and removes it. */
  register(identity: string, taskQueue: string, buildId?: string): () => Promise<void>;
}

export const defaultBudgetBytes = (): number => Math.floor(os.totalmem() / 2);
export const defaultIdentity = (): string => `${process.pid}@${os.hostname()}`;

export function fleetMemory(opts: { budgetBytes: number; dataRoot: string; maxSlots: number }): FleetMemory {
  const budgetBytes = opts.budgetBytes;
  const cacheBytes = preparedCacheBytes(budgetBytes);
  const ledger = new MemoryLedger(budgetBytes - cacheBytes);
  let fleet = { smallest: budgetBytes, largest: budgetBytes };
  const claimBytes = () => maxUnitBytes(fleet.smallest);
  const refreshFleet = async (): Promise<void> => {
    const budgets = (await liveRecords(opts.dataRoot)).map((r) => r.budgetBytes);
    fleet = { smallest: Math.min(budgetBytes, ...budgets), largest: Math.max(budgetBytes, ...budgets) };
  };
  const startedAtMs = Date.now();
  return {
    budgetBytes,
    cacheBytes,
    ledger,
    tuner: memoryTuner(ledger, { claimBytes, maxSlots: opts.maxSlots }),
    claimBytes,
    admission: {
      reserve: (id, bytes, what, own) => ledger.reserve(id, bytes, what, own),
      release: (id) => ledger.release(id),
      fleetBudgets: () => fleet,
    },
    register(identity, taskQueue, buildId) {
      const record = (): WorkerRecord => ({
        identity,
        host: os.hostname(),
        pid: process.pid,
        taskQueue,
        ...(buildId ? { buildId } : {}),
        budgetBytes,
        cacheBytes,
        reservedBytes: ledger.reservedBytes,
        claimBytes: claimBytes(),
        running: ledger.list(),
        waiting: ledger.waitingCount,
        unmarkedTakes: ledger.unmarkedTakes,
        markWaits: { ...ledger.markWaits },
        eager: { ...ledger.eager },
        startedAtMs,
        lastSeenMs: Date.now(),
      });
      let stopped = false;
      let last: Promise<void> = Promise.resolve();
      const tick = () => {
        // One write at a time; a failed write is retried on the next tick (the record goes stale meanwhile).
        last = last.then(() => (stopped ? undefined : writeRecord(opts.dataRoot, record()).then(refreshFleet))).catch(() => undefined);
      };
      tick();
      const timer = setInterval(tick, RECORD_EVERY_MS);
      timer.unref();
      // A change is written soon (at most one write per CHANGE_WRITE_MS), not only on the period.
      let soon: NodeJS.Timeout | undefined;
      ledger.onChange = () => {
        soon ??= setTimeout(() => {
          soon = undefined;
          tick();
        }, CHANGE_WRITE_MS);
        soon.unref();
      };
      return async () => {
        stopped = true;
        ledger.onChange = () => undefined;
        if (soon) clearTimeout(soon);
        clearInterval(timer);
        await last;
        await removeRecord(opts.dataRoot, identity);
      };
    },
  };
}
