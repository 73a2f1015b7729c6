import type { Policy } from '../policy/types';

/**
 * The defaults of src/config/policy-schema.ts, repeated here so the simulator and the
 * policy tests do not depend on the config module (and zod) and keep working while it
 * changes. Override what a scenario needs.
 */
export function simPolicy(overrides: Partial<Policy> = {}): Policy {
  return {
    maxConsecutiveTurns: { merge: 4, optimize: 1, index: 1, gc: 1 },
    maxTurnWaitSecs: { merge: 60, optimize: 120, index: 300, gc: 600 },
    stallSecs: { read: 30, encode: 30, commit: 60 },
    classes: { merge: 2, optimize: 3, index: 3, gc: 4 },
    basePriority: { merge: 3, optimize: 2, index: 2, gc: 1 },
    agingPerSec: 0.1,
    softBacklog: 100,
    hardBacklog: 1000,
    maxWriteDelayMs: 2000,
    maxConcurrentPreparations: 4,
    directMergeMaxBytes: 1_048_576,
    snapshotIntervalSecs: 300,
    snapshotMaxIntervalSecs: 21_600,
    periodSecs: { optimize: 300, index: 600, gc: 900 },
    periodicWhenIdle: false,
    retentionSecs: 86_400,
    commitRetryBaseSecs: 1,
    commitRetryMaxSecs: 60,
    ...overrides,
  };
}
