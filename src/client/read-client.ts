import * as grpc from '@grpc/grpc-js';
import { decodePendingActivities, decodePendingWorkflowTask, decodePollers, decodeQueryResponse, decodeWorkflowTaskQueue, encodeDescribeRequest, encodeDescribeTaskQueueRequest, encodeQueryRequest, type WirePayload, type WirePendingWorkflowTask, type WirePoller } from './temporal-api-codec';
import type { PendingActivity } from './preparation-progress';
import { connectionSecurity, type ConnectionSecurity } from './connection-security';

// A read-only Temporal client for the commands an operator runs often (`status`): one
// gRPC channel and two unary calls, without loading @temporalio/client. Errors keep the
// names the CLI already maps (WorkflowNotFoundError exits 2 with a hint).

const SERVICE = '/temporal.api.workflowservice.v1.WorkflowService';
const CALL_TIMEOUT_MS = 30_000;
/**
 * A query's own deadline, past the server's 30 s: a query the sticky worker holds then
 * comes back as the server's "query timed out before a worker could process it", which
 * read-status.ts asks again (busy-retry.ts), not as this client's deadline, which it
 * would not.
 */
const QUERY_TIMEOUT_MS = 40_000;

export class WorkflowNotFoundError extends Error {
  constructor(workflowId: string, detail: string) {
    super(detail || `workflow not found for ID: ${workflowId}`);
    this.name = 'WorkflowNotFoundError';
  }
}

/** The value of a payload the default data converter wrote (json/plain or binary/null). */
export function payloadValue(p: WirePayload | undefined): unknown {
  if (!p) return undefined;
  const encoding = p.metadata.encoding;
  if (encoding === 'binary/null') return null;
  if (encoding === 'json/plain') return JSON.parse(Buffer.from(p.data).toString('utf8')) as unknown;
  throw new Error(`payload encoding ${JSON.stringify(encoding)} is not supported by the read-only client`);
}

/** The same TLS / mTLS as the SDK's connections (connection-security.ts), for a raw grpc-js channel. */
function channelSecurity(s: ConnectionSecurity): { credentials: grpc.ChannelCredentials; options: grpc.ChannelOptions } {
  if (!s.tls) return { credentials: grpc.credentials.createInsecure(), options: {} };
  const t = s.tls;
  const credentials = grpc.credentials.createSsl(t.serverRootCACertificate ?? null, t.clientCertPair?.key ?? null, t.clientCertPair?.crt ?? null);
  return { credentials, options: t.serverNameOverride ? { 'grpc.ssl_target_name_override': t.serverNameOverride, 'grpc.default_authority': t.serverNameOverride } : {} };
}

export class ReadClient {
  private readonly client: grpc.Client;

  constructor(
    address: string,
    private readonly namespace: string,
    security: ConnectionSecurity = connectionSecurity(),
  ) {
    const { credentials, options } = channelSecurity(security);
    this.client = new grpc.Client(address, credentials, options);
    this.apiKey = security.apiKey;
  }

  private readonly apiKey: string | undefined;

  private metadata(): grpc.Metadata {
    const m = new grpc.Metadata();
    if (this.apiKey) m.set('authorization', `Bearer ${this.apiKey}`);
    return m;
  }

  private call(method: string, request: Uint8Array, workflowId: string, timeoutMs = CALL_TIMEOUT_MS): Promise<Uint8Array> {
    return new Promise((resolve, reject) => {
      const id = (b: Uint8Array): Buffer => Buffer.from(b.buffer, b.byteOffset, b.byteLength);
      this.client.makeUnaryRequest<Uint8Array, Uint8Array>(
        `${SERVICE}/${method}`,
        id,
        (b: Buffer) => b,
        request,
        this.metadata(),
        { deadline: Date.now() + timeoutMs },
        (err, res) => {
          if (err?.code === grpc.status.NOT_FOUND) reject(new WorkflowNotFoundError(workflowId, err.details));
          else if (err) reject(new Error(`${method}: ${err.details || err.message}`));
          else resolve(res ?? new Uint8Array(0));
        },
      );
    });
  }

  /** Runs a query on the workflow's current run and decodes its JSON answer. */
  async query<T>(workflowId: string, queryType: string): Promise<T> {
    const answer = decodeQueryResponse(await this.call('QueryWorkflow', encodeQueryRequest(this.namespace, workflowId, queryType), workflowId, QUERY_TIMEOUT_MS));
    if (answer.rejectedStatus !== null) throw new Error(`query ${queryType} rejected: the workflow is not running (status ${answer.rejectedStatus})`);
    return payloadValue(answer.result[0]) as T;
  }

  /** The workflow's pending activities with their last heartbeat, its task queue and its pending workflow task (DescribeWorkflowExecution). */
  async describe(workflowId: string): Promise<{ pending: PendingActivity[]; taskQueue: string | null; workflowTask: WirePendingWorkflowTask | null }> {
    const bytes = await this.call('DescribeWorkflowExecution', encodeDescribeRequest(this.namespace, workflowId), workflowId);
    const pending = decodePendingActivities(bytes).map((a) => ({ activityId: a.activityId, details: payloadValue(a.heartbeatDetails[0]) ?? null, attempt: a.attempt, lastHeartbeatMs: a.lastHeartbeatMs, started: a.state !== 1, worker: a.lastWorkerIdentity }));
    return { pending, taskQueue: decodeWorkflowTaskQueue(bytes), workflowTask: decodePendingWorkflowTask(bytes) };
  }

  /** When each worker last polled `taskQueue` for workflow tasks (DescribeTaskQueue). */
  async pollers(taskQueue: string): Promise<WirePoller[]> {
    return decodePollers(await this.call('DescribeTaskQueue', encodeDescribeTaskQueueRequest(this.namespace, taskQueue), taskQueue));
  }

  close(): void {
    this.client.close();
  }
}
