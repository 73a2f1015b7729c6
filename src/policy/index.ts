// The pure scheduling core of a table (docs/design.md invariants 1, 3, 4, 5, 7, 8): no I/O,
// no clock, no Temporal. The table workflow feeds it events and carries out its decisions.

export * from './types';
export { initialState, carryOver } from './initial';
export { parseCarried, carriedSchema, CARRIED_FORMAT, type Carried, type CarriedResult } from './carried';
export { maxSnapshotSecs, changeMark, hasChanged } from './idle';
export { step, stepAll } from './step';
export { writePressure, backlogOf } from './pressure';
export { headroomLine, statusView, type StatusView, type QueueEntry } from './status';
export {
  effectiveClass,
  classWhy,
  turnOrder,
  sortForTurn,
  pickTurn,
  agedPriority,
  isEligible,
  isOverdue,
  promotionAtMs,
  type TurnPick,
} from './order';
export { foldDemand, foldSnapshot } from './fold';
export { earliestWake, nextWakeAt, wakeReason, type Wake } from './wake';
export { justGrantedBrief, justGrantedDirect } from './brief-turn';
export { NEVER } from './time';
export { factsOf, seqHorizon, refuseDemand, refuseAwaitMerged, refuseBump, refusePause, refuseResume, type TableFacts } from './request-checks';
export { rateSample, addRateSample, estimateDrain, formatDrain, DRAIN_WINDOW_MS, DRAIN_SAMPLE_EVERY_MS, type RateSample, type DrainEstimate, type DrainState } from './drain-eta';
export { canonicalOrder } from './batch-order';
export { recordGrants, MAX_GRANTS, type Grant } from './grants';
export { adoptedWants, criteria, predictedRewriteBytes, ADOPTED_DEFAULTS } from './adopted';
export { emptyLog, recordDecision, recordSample, MAX_DECISIONS, MAX_SAMPLES, type AdoptedLog, type MaintenanceDecision, type TableSample } from './adopted-log';
