import { readSealed } from '../src/storage/generation-store';
import type { SnapshotResult, TableRef } from './contract';
import type { ActivityDeps } from './deps';

// A scan of the generation store (hint, gc floor and a few stats per shard): cheap, read-only, any worker.
export function makeSnapshot(deps: ActivityDeps) {
  return async function snapshot(input: TableRef): Promise<SnapshotResult> {
    return readSealed(deps.dataRoot, input.table);
  };
}
