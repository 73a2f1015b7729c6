import { readSealed } from '../src/storage/generation-store';
import type { SnapshotResult, TableRef } from './contract';
import type { ActivityDeps } from './deps';
import { costMeter } from './unit-cost';

// A scan of the generation store (hint, gc floor and a few stats per shard): cheap, read-only, any worker.
export function makeSnapshot(deps: ActivityDeps) {
  return async function snapshot(input: TableRef): Promise<SnapshotResult> {
    // Reports no cost, but takes its share of the CPU while it runs (cpu-meter.ts).
    return costMeter(deps).during(() => readSealed(deps.dataRoot, input.table));
  };
}
