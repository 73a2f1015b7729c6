import { readSealed } from '../src/storage/generation-store';
import type { SnapshotResult, TableRef } from './contract';
import type { ActivityDeps } from './deps';
import { mapCommonError } from './failures';

// A scan of the generation store (hint, gc floor and a few stats per shard): cheap, read-only, any worker.
export function makeSnapshot(deps: ActivityDeps) {
  return async function snapshot(input: TableRef): Promise<SnapshotResult> {
    try {
      return await readSealed(deps.dataRoot, input.table);
    } catch (err) {
      throw mapCommonError(err);
    }
  };
}
