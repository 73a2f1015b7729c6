import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { UnitHistory } from '../policy/unit-history';
import type { DemandRecord } from '../policy/demand-record';
import type { SignalDefinition } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { optionalTsToMs } from '@temporalio/common/lib/time';
import type { z } from 'zod';
import { workflowIdForTable } from '../messages/names';
import { formatZodError } from '../util/zod-format';
import { bumpSchema, demandSchema, demandsSchema, pauseSchema, type BumpRequest, type Demand, type PauseRequest } from '../messages/payload-schemas';
import { applyOverride, defaultPolicy, type PolicyOverride } from '../config/policy-schema';
import * as msg from '../../workflows/messages';
import { TurnstileBacklog, TurnstileWritePressure } from '../../workflows/search-attributes';
import type { StatusView } from '../../workflows/messages';
import { tableWorkflow, type TableWorkflowArgs } from '../../workflows';
import type { AdoptedMode, Policy } from '../policy/types';
import { refuseBump, refusePause, refuseResume } from '../policy/request-checks';
import { payloadProblem } from '../messages/payload-limit';
import { noLiveWorker, retryQuery, retryWhileBusy, stuckWorkflowTask } from './busy-retry';
import { RequestRefusedError } from './refused';
import { factsOfView } from './view-facts';
import { withPreparationProgress, type PendingActivity } from './preparation-progress';

// The client side of a table: every call validates its input with the same schemas
// the workflow uses, so bad input fails here with one line and nothing is sent.

function check<T>(r: z.SafeParseReturnType<unknown, T>, what: string, raw: unknown): T {
  const tooLarge = payloadProblem(what, raw);
  if (tooLarge !== null) throw new RequestRefusedError(tooLarge);
  if (r.success) return r.data;
  throw new RequestRefusedError(`${what}: ${formatZodError(r.error)}`);
}

/** A refusal by the table checks (src/policy/request-checks.ts) as an error. */
function refuse(why: string | null, what: string): void {
  if (why !== null) throw new RequestRefusedError(`${what}: ${why}`);
}

export class TableClient {
  constructor(
    readonly client: Client,
    readonly taskQueue: string,
  ) {}

  handle(table: string) {
    return this.client.workflow.getHandle(workflowIdForTable(table));
  }

  /** Starts the table's workflow; fails if it already runs. */
  async start(args: TableWorkflowArgs): Promise<void> {
    if (args.policy) {
      const r = applyOverride(defaultPolicy(), args.policy);
      if (!r.ok) throw new Error(`policy: ${r.error}`);
    }
    try {
      await this.client.workflow.start(tableWorkflow, { workflowId: workflowIdForTable(args.table), taskQueue: this.taskQueue, args: [args] });
    } catch (e) {
      if (e instanceof WorkflowExecutionAlreadyStartedError) throw new Error(`table ${args.table}: already exists`);
      throw e;
    }
  }

  /** Registers and signals in one call: starts the workflow if it is not running. */
  async demand(args: TableWorkflowArgs, d: Demand): Promise<void> {
    await this.signalWithStart(args, msg.demand, check(demandSchema.safeParse(d), 'demand', d));
  }

  /** Several shards' demand in one signal-with-start (what TableWriter sends). */
  async demands(args: TableWorkflowArgs, ds: Demand[]): Promise<void> {
    await this.signalWithStart(args, msg.demands, check(demandsSchema.safeParse(ds), 'demands', ds));
  }

  private async signalWithStart<T>(args: TableWorkflowArgs, signal: SignalDefinition<[T]>, payload: T): Promise<void> {
    await this.client.workflow.signalWithStart(tableWorkflow, {
      workflowId: workflowIdForTable(args.table),
      taskQueue: this.taskQueue,
      args: [args],
      signal,
      signalArgs: [payload],
    });
  }

  /** The workflow's own state (one query): what writers ask for their pressure's limits, under their own deadline. */
  async state(table: string): Promise<StatusView> {
    return this.handle(table).query(msg.state);
  }

  /**
   * The backlog and write pressure the table last published in its search attributes
   * (workflows/ui.ts), or null before it published any. Read with describe, which the
   * server answers from the run's own record: no worker is involved, unlike a query.
   */
  async publishedPressure(table: string): Promise<{ backlog: number; writePressure: number } | null> {
    const attributes = (await this.handle(table).describe()).typedSearchAttributes;
    const backlog = attributes.get(TurnstileBacklog);
    const writePressure = attributes.get(TurnstileWritePressure);
    return typeof backlog === 'number' && typeof writePressure === 'number' ? { backlog, writePressure } : null;
  }

  /**
   * The state for an operator's command: asked again while no worker answers in time or
   * the workflow's last task failed (both pass), so a busy worker delays `status`, `bump`
   * or `pause` instead of failing it.
   */
  operatorState(table: string): Promise<StatusView> {
    return retryQuery(() => this.state(table), { whyNot: () => this.whyNoAnswer(table) });
  }

  /** Every unit that ran (bounded per kind) with its cost: `turnstile history`. */
  history(table: string): Promise<UnitHistory> {
    return retryQuery(() => this.handle(table).query(msg.history), { whyNot: () => this.whyNoAnswer(table) });
  }

  /** The table's recorded demand and unit durations: `turnstile policy --dry-run`. */
  demandRecord(table: string): Promise<DemandRecord> {
    return retryQuery(() => this.handle(table).query(msg.demandRecord), { whyNot: () => this.whyNoAnswer(table) });
  }

  /** Why no worker can answer the table's query (its workflow task keeps failing, or none has polled its task queue lately), or null. */
  private async whyNoAnswer(table: string): Promise<string | null> {
    const { taskQueue, raw } = await this.handle(table).describe();
    const task = raw.pendingWorkflowTask;
    const stuck = stuckWorkflowTask(table, task ? { attempt: task.attempt ?? 1 } : null);
    if (stuck !== null) return stuck;
    const { pollers } = await this.client.workflowService.describeTaskQueue({
      namespace: this.client.options.namespace,
      taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    });
    return noLiveWorker(taskQueue, (pollers ?? []).map((p) => ({ lastAccessMs: optionalTsToMs(p.lastAccessTime) ?? null })), Date.now());
  }

  /** The state for operators: with each preparation's last heartbeat joined in (query + describe). */
  async status(table: string): Promise<StatusView> {
    const handle = this.handle(table);
    const [view, description] = await Promise.all([this.operatorState(table), handle.describe()]);
    const converter = this.client.options.loadedDataConverter.payloadConverter;
    const pending: PendingActivity[] = (description.raw.pendingActivities ?? []).map((a) => {
      const first = a.heartbeatDetails?.payloads?.[0];
      return {
        activityId: a.activityId ?? '',
        details: first ? converter.fromPayload(first) : null,
        attempt: a.attempt ?? 1,
        lastHeartbeatMs: optionalTsToMs(a.lastHeartbeatTime) ?? null,
        // PENDING_ACTIVITY_STATE_SCHEDULED = 1: in the task queue, no worker has taken it.
        started: a.state !== 1,
        worker: a.lastWorkerIdentity || null,
      };
    });
    return withPreparationProgress(view, pending, Date.now());
  }

  // Operator signals are checked against the table first (the `state` query), so a bump
  // of a unit that does not exist or a second pause is refused here with one line; the
  // workflow checks again on arrival (the table may have moved on) and counts what it drops.

  async bump(table: string, req: BumpRequest): Promise<void> {
    const b = check(bumpSchema.safeParse(req), 'bump', req);
    refuse(refuseBump(factsOfView(await this.operatorState(table)), b), 'bump');
    await this.handle(table).signal(msg.bump, req);
  }

  async pause(table: string, req: PauseRequest = {}): Promise<void> {
    const p = check(pauseSchema.safeParse(req), 'pause', req);
    refuse(refusePause(factsOfView(await this.operatorState(table)), p.kind), 'pause');
    await this.handle(table).signal(msg.pause, req);
  }

  async resume(table: string, req: PauseRequest = {}): Promise<void> {
    const p = check(pauseSchema.safeParse(req), 'resume', req);
    refuse(refuseResume(factsOfView(await this.operatorState(table)), p.kind), 'resume');
    await this.handle(table).signal(msg.resume, req);
  }

  async setPolicy(table: string, override: PolicyOverride): Promise<Policy> {
    refuse(payloadProblem('policy', override), 'setPolicy');
    return retryWhileBusy(() => this.handle(table).executeUpdate(msg.setPolicy, { args: [override] }));
  }

  /** Adopted tables: shadow or active (the workflow's validator refuses anything else). */
  async setMode(table: string, mode: AdoptedMode): Promise<AdoptedMode> {
    return retryWhileBusy(() => this.handle(table).executeUpdate(msg.setMode, { args: [mode] }));
  }

  /** Tables with a running workflow, from visibility. */
  async list(): Promise<{ table: string; status: string; startTime: Date }[]> {
    const out: { table: string; status: string; startTime: Date }[] = [];
    for await (const wf of this.client.workflow.list({ query: `WorkflowType = 'tableWorkflow' AND ExecutionStatus = 'Running'` })) {
      out.push({ table: wf.workflowId.replace(/^table\//, ''), status: wf.status.name, startTime: wf.startTime });
    }
    return out.sort((a, b) => a.table.localeCompare(b.table));
  }
}
