import { status as grpcStatus } from '@grpc/grpc-js';
import { isGrpcServiceError, type Client } from '@temporalio/client';
import { checkVersion } from '../../workflows/messages';
import { temporal } from '@temporalio/proto';
import { visibleVersion } from '../worker/build-id';
import { sleep } from '../util/sleep';

// The Worker Deployment that Turnstile's workers poll as versions of: what it holds, which
// version is current or ramping, how many table runs each version still has, and the
// moves an operator makes (SDK 1.24 has no deployment client; these are the raw RPCs).

const { WorkerDeploymentVersionStatus: VS, RoutingConfigUpdateState } = temporal.api.enums.v1;

export type VersionStatus = 'inactive' | 'current' | 'ramping' | 'draining' | 'drained' | 'created' | 'unknown';

const STATUS_NAMES: Record<number, VersionStatus> = {
  [VS.WORKER_DEPLOYMENT_VERSION_STATUS_INACTIVE]: 'inactive',
  [VS.WORKER_DEPLOYMENT_VERSION_STATUS_CURRENT]: 'current',
  [VS.WORKER_DEPLOYMENT_VERSION_STATUS_RAMPING]: 'ramping',
  [VS.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINING]: 'draining',
  [VS.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINED]: 'drained',
  [VS.WORKER_DEPLOYMENT_VERSION_STATUS_CREATED]: 'created',
};

export interface DeploymentVersion {
  buildId: string;
  status: VersionStatus;
  createdAt: string | null;
}

export interface Deployment {
  name: string;
  /** Build id new and continued-as-new table runs go to; null: none set (unversioned). */
  current: string | null;
  ramping: { buildId: string; percent: number } | null;
  /** A routing change is still reaching the task queues. */
  updating: boolean;
  versions: DeploymentVersion[];
  conflictToken: Uint8Array | null;
}

const isoOf = (t: { seconds?: unknown } | null | undefined): string | null =>
  t?.seconds == null ? null : new Date(Number(t.seconds) * 1000).toISOString();

const notFound = (e: unknown) => isGrpcServiceError(e) && e.code === grpcStatus.NOT_FOUND;

/** The deployment as the server describes it; an empty one when no worker has polled as it yet. */
export async function describeDeployment(client: Client, deploymentName: string): Promise<Deployment> {
  let r;
  try {
    r = await client.workflowService.describeWorkerDeployment({ namespace: client.options.namespace, deploymentName });
  } catch (e) {
    if (notFound(e)) return { name: deploymentName, current: null, ramping: null, updating: false, versions: [], conflictToken: null };
    throw e;
  }
  const info = r.workerDeploymentInfo;
  const routing = info?.routingConfig;
  const ramp = routing?.rampingDeploymentVersion?.buildId;
  return {
    name: deploymentName,
    current: routing?.currentDeploymentVersion?.buildId || null,
    ramping: ramp ? { buildId: ramp, percent: routing?.rampingVersionPercentage ?? 0 } : null,
    updating: info?.routingConfigUpdateState === RoutingConfigUpdateState.ROUTING_CONFIG_UPDATE_STATE_IN_PROGRESS,
    versions: (info?.versionSummaries ?? []).map((v) => ({
      buildId: v.deploymentVersion?.buildId ?? v.version ?? '',
      status: (v.status != null && STATUS_NAMES[v.status]) || 'unknown',
      createdAt: isoOf(v.createTime),
    })),
    conflictToken: r.conflictToken ?? null,
  };
}

/** The visibility query of running table runs pinned to a version (null: runs of no version). */
export function tableRunsQuery(deploymentName: string, buildId: string | null): string {
  const on = buildId === null ? 'TemporalWorkerDeploymentVersion IS NULL' : `TemporalWorkerDeploymentVersion = '${visibleVersion(deploymentName, buildId)}'`;
  return `WorkflowType = 'tableWorkflow' AND ExecutionStatus = 'Running' AND ${on}`;
}

export async function countTableRuns(client: Client, deploymentName: string, buildId: string | null): Promise<number> {
  const r = await client.workflowService.countWorkflowExecutions({ namespace: client.options.namespace, query: tableRunsQuery(deploymentName, buildId) });
  return Number(r.count);
}

/** Conflicting routing changes (another operator, a worker's first start) are retried this long. */
const ROUTING_CHANGE_TIMEOUT_MS = 60_000;

/**
 * Makes a version current, or ramps one to `percent` of new and continued-as-new runs
 * (`percent` null: current). Retries on a conflicting change. The server then carries
 * the change to every task queue of the deployment in the background (a second or two on
 * the local cluster): `routingSettled` waits for that.
 */
export async function routeTo(client: Client, deploymentName: string, buildId: string, percent: number | null, identity: string): Promise<void> {
  const deadline = Date.now() + ROUTING_CHANGE_TIMEOUT_MS;
  for (;;) {
    const d = await describeDeployment(client, deploymentName);
    if (!d.versions.some((v) => v.buildId === buildId)) {
      throw new Error(`deployment ${deploymentName} has no version ${buildId} (no worker of that build has polled; versions: ${d.versions.map((v) => v.buildId).join(', ') || 'none'})`);
    }
    const req = { namespace: client.options.namespace, deploymentName, buildId, identity, ...(d.conflictToken ? { conflictToken: d.conflictToken } : {}) };
    try {
      if (percent === null) await client.workflowService.setWorkerDeploymentCurrentVersion(req);
      else await client.workflowService.setWorkerDeploymentRampingVersion({ ...req, percentage: percent });
      break;
    } catch (e) {
      const retryable = isGrpcServiceError(e) && (e.code === grpcStatus.FAILED_PRECONDITION || e.code === grpcStatus.ABORTED || e.code === grpcStatus.RESOURCE_EXHAUSTED);
      if (!retryable || Date.now() > deadline) throw e;
      await sleep(500);
    }
  }
}

/**
 * Waits until the last routing change reached every task queue; false if it still had not
 * after `timeoutMs`. The deployment's own flag is the quick answer, but server 1.32.1
 * sometimes leaves it "in progress" for minutes after its propagation activities completed
 * (the deployment workflow still lists a revision as propagating), so the task queues of the
 * current and ramping versions are asked too: routed once each names the same current and
 * ramping version as the deployment.
 */
export async function routingSettled(client: Client, deploymentName: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const d = await describeDeployment(client, deploymentName);
    if (!d.updating || (await taskQueuesRouted(client, d))) return true;
    if (Date.now() > deadline) return false;
    await sleep(500);
  }
}

/** Whether every task queue of the current and ramping versions routes as the deployment does. */
async function taskQueuesRouted(client: Client, d: Deployment): Promise<boolean> {
  const builds = [d.current, d.ramping?.buildId].filter((b): b is string => b != null);
  if (builds.length === 0) return false;
  const namespace = client.options.namespace;
  const queues = new Map<string, { name: string; type: number }>();
  for (const buildId of builds) {
    const v = await client.workflowService.describeWorkerDeploymentVersion({ namespace, deploymentVersion: { deploymentName: d.name, buildId } });
    for (const q of v.workerDeploymentVersionInfo?.taskQueueInfos ?? []) if (q.name && q.type != null) queues.set(`${q.name}/${q.type}`, { name: q.name, type: q.type });
  }
  if (queues.size === 0) return false;
  for (const q of queues.values()) {
    const info = (await client.workflowService.describeTaskQueue({ namespace, taskQueue: { name: q.name }, taskQueueType: q.type })).versioningInfo;
    const current = info?.currentDeploymentVersion?.buildId || null;
    const ramping = info?.rampingDeploymentVersion?.buildId || null;
    if (current !== d.current || ramping !== (d.ramping?.buildId ?? null)) return false;
    if (d.ramping && (info?.rampingVersionPercentage ?? 0) !== d.ramping.percent) return false;
  }
  return true;
}

/**
 * Signals every running table run not pinned to `exceptBuildId` (null: every one) to take a workflow task now:
 * a pinned run learns that its target version changed only in a task, and an idle table
 * may have none for a long time. Returns how many were signalled.
 */
export async function nudgeTables(client: Client, deploymentName: string, exceptBuildId: string | null): Promise<number> {
  const others = exceptBuildId === null ? '' : ` AND TemporalWorkerDeploymentVersion != '${visibleVersion(deploymentName, exceptBuildId)}'`;
  const query = `WorkflowType = 'tableWorkflow' AND ExecutionStatus = 'Running'${others}`;
  const ids: string[] = [];
  for await (const w of client.workflow.list({ query })) ids.push(w.workflowId);
  const CONCURRENCY = 16;
  for (let i = 0; i < ids.length; i += CONCURRENCY) {
    await Promise.all(
      ids.slice(i, i + CONCURRENCY).map((id) =>
        client.workflow
          .getHandle(id)
          .signal(checkVersion)
          .catch((e: unknown) => {
            if (!notFound(e)) throw e; // finished meanwhile
          }),
      ),
    );
  }
  return ids.length;
}

/** Waits until a worker of `buildId` has polled, so the server knows the version and its task queues. */
export async function waitForVersion(client: Client, deploymentName: string, buildId: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await describeDeployment(client, deploymentName)).versions.some((v) => v.buildId === buildId)) {
    if (Date.now() > deadline) throw new Error(`deployment ${deploymentName}: version ${buildId} not seen within ${timeoutMs / 1000} s of its worker's start`);
    await sleep(500);
  }
}

/**
 * What a starting worker does about routing: the first version of a deployment becomes
 * current by itself (nothing else could run the tables); later ones wait for an
 * operator's `upgrade set-current`, unless `always` (the dev process, whose user started
 * the new release). Returns the current version afterwards.
 */
export async function settleRouting(client: Client, deploymentName: string, buildId: string, mode: 'if-none' | 'always', identity: string): Promise<{ current: string; changed: boolean; nudged: number }> {
  await waitForVersion(client, deploymentName, buildId);
  const d = await describeDeployment(client, deploymentName);
  if (d.current === buildId || (d.current !== null && mode === 'if-none')) return { current: d.current, changed: false, nudged: 0 };
  await routeTo(client, deploymentName, buildId, null, identity);
  // Told now and again once the change reached the task queues (see upgrade.ts).
  const nudged = await nudgeTables(client, deploymentName, buildId);
  if (await routingSettled(client, deploymentName, ROUTING_CHANGE_TIMEOUT_MS)) await nudgeTables(client, deploymentName, buildId);
  return { current: buildId, changed: true, nudged };
}
