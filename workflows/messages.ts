import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { AwaitMergedRequest, AwaitMergedResult, BumpRequest, Demand, PauseRequest } from '../src/messages/payload-schemas';
import type { PolicyOverride } from '../src/config/policy-schema';
import type { AdoptedLog, DrainEstimate, Grant, statusView } from '../src/policy';
import type { AdoptedMode, Kind, Policy } from '../src/policy/types';
import type { UnitHistory } from '../src/policy/unit-history';
import type { DemandRecord } from '../src/policy/demand-record';

import type { WritePressure } from '../src/writer';

/** The `state` query: the `status --json` object (README) plus what writers need. */
export type StatusView = ReturnType<typeof statusView> & {
  stalledUnits: string[];
  pressure: WritePressure;
  policy: Policy;
  /** Absent from workflows running code from before the drain ETA and the grant record. */
  drain?: DrainEstimate;
  grants?: Grant[];
  /** Adopted tables: decisions and looks at the table since adoption (src/policy/adopted-log.ts). */
  adoptedLog?: AdoptedLog;
  /** What maintenance wrote per byte sealed; absent from workflows of releases before 0.4.0. */
  cost?: TableCost;
};

export interface TableCost {
  /** Bytes writers reported for the generations they sealed. */
  sealedBytes: number;
  /** Bytes written by each kind's units (prepared batches, table data and index files). */
  bytesWritten: Partial<Record<Kind, number>>;
  /** Sum of bytesWritten / sealedBytes; null before anything was sealed. */
  writeAmplification: number | null;
}

// Every signal, query and update of the table workflow, defined once; the wire name
// equals the symbol. Workflows, the client and the tests import these constants.

export const demand = defineSignal<[Demand]>('demand');
export const demands = defineSignal<[Demand[]]>('demands');
export const bump = defineSignal<[BumpRequest]>('bump');
export const pause = defineSignal<[PauseRequest]>('pause');
export const resume = defineSignal<[PauseRequest]>('resume');
/**
 * Carries nothing: it gives the run a workflow task, in which it learns whether its
 * Worker Deployment's current version changed and, if so, continues as new onto it.
 */
export const checkVersion = defineSignal('checkVersion');

export const awaitMerged = defineUpdate<AwaitMergedResult, [AwaitMergedRequest]>('awaitMerged');
export const setPolicy = defineUpdate<Policy, [PolicyOverride]>('setPolicy');
/** Adopted tables: shadow (decide and record) or active (carry out); answers the mode now in force. */
export const setMode = defineUpdate<AdoptedMode, [AdoptedMode]>('setMode');

// The name is part of the type so read-status.ts can check its literal without loading this module.
export const state = defineQuery<StatusView, [], 'state'>('state');

/** Every unit that ran (bounded per kind) with its cost (src/policy/unit-history.ts). */
export const history = defineQuery<UnitHistory, [], 'history'>('history');
/** The table's demand and unit durations in time buckets, for `policy --dry-run` (src/policy/demand-record.ts). */
export const demandRecord = defineQuery<DemandRecord, [], 'demandRecord'>('demandRecord');
