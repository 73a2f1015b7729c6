import Long from 'long';
import { temporal, google } from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { decodePendingActivities, decodePendingWorkflowTask, decodePollers, decodeQueryResponse, decodeWorkflowTaskQueue, encodeDescribeRequest, encodeDescribeTaskQueueRequest, encodeQueryRequest } from '../../src/client/temporal-api-codec';
import { payloadValue } from '../../src/client/read-client';

// The hand-written encoding of the read-only client against the SDK's own generated
// proto classes: field numbers or wire types that drift fail here, not in production.

const svc = temporal.api.workflowservice.v1;
const json = (v: unknown) => ({ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(JSON.stringify(v)) });

describe('read-only client wire format', () => {
  it('requests decode as the SDK reads them', () => {
    const q = svc.QueryWorkflowRequest.decode(encodeQueryRequest('ns-1', 'table/orders', 'state'));
    expect([q.namespace, q.execution?.workflowId, q.execution?.runId, q.query?.queryType]).toEqual(['ns-1', 'table/orders', '', 'state']);
    const d = svc.DescribeWorkflowExecutionRequest.decode(encodeDescribeRequest('ns-2', 'table/x'));
    expect([d.namespace, d.execution?.workflowId]).toEqual(['ns-2', 'table/x']);
    const tq = svc.DescribeTaskQueueRequest.decode(encodeDescribeTaskQueueRequest('ns-3', 'turnstile'));
    expect([tq.namespace, tq.taskQueue?.name, tq.taskQueue?.kind, tq.taskQueueType]).toEqual(['ns-3', 'turnstile', temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL, temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW]);
  });

  it('responses the SDK encodes decode to the same values; unknown fields are skipped', () => {
    const view = { table: 'orders', backlog: 3, nested: { a: [1, 'é'] } };
    const res = svc.QueryWorkflowResponse.encode({ queryResult: { payloads: [json(view)] } }).finish();
    expect(payloadValue(decodeQueryResponse(res).result[0])).toEqual(view);
    const rejected = decodeQueryResponse(svc.QueryWorkflowResponse.encode({ queryRejected: { status: 2 } }).finish());
    expect(rejected.rejectedStatus).toBe(2);

    const describe = svc.DescribeWorkflowExecutionResponse.encode({
      workflowExecutionInfo: { execution: { workflowId: 'table/orders', runId: 'r' }, historyLength: Long.fromNumber(77) },
      pendingActivities: [
        {
          activityId: 'prepare merge/s0 1-3',
          activityType: { name: 'prepareMerge' },
          heartbeatDetails: { payloads: [json({ phase: 'read', filesRead: 2 })] },
          lastHeartbeatTime: google.protobuf.Timestamp.create({ seconds: Long.fromNumber(1_700_000_000), nanos: 250_000_000 }),
          attempt: 3,
          lastWorkerIdentity: 'w1',
          state: 2, // started
        },
        { activityId: 'commit merge/s1 1-1', attempt: 1, state: 1 }, // scheduled: in the task queue, no worker took it
      ],
      pendingWorkflowTask: { attempt: 1 },
    }).finish();
    const pending = decodePendingActivities(describe);
    expect(pending.map((p) => ({ ...p, heartbeatDetails: p.heartbeatDetails.map(payloadValue) }))).toEqual([
      { activityId: 'prepare merge/s0 1-3', heartbeatDetails: [{ phase: 'read', filesRead: 2 }], lastHeartbeatMs: 1_700_000_000_250, attempt: 3, state: 2, lastWorkerIdentity: 'w1' },
      { activityId: 'commit merge/s1 1-1', heartbeatDetails: [], lastHeartbeatMs: null, attempt: 1, state: 1, lastWorkerIdentity: null },
    ]);
  });

  it('the run\'s task queue and that queue\'s pollers decode from what the SDK encodes', () => {
    const described = svc.DescribeWorkflowExecutionResponse.encode({
      executionConfig: { taskQueue: { name: 'tq-orders', kind: 1 }, defaultWorkflowTaskTimeout: { seconds: Long.fromNumber(10) } },
      workflowExecutionInfo: { execution: { workflowId: 'table/orders' } },
      pendingActivities: [{ activityId: 'a' }],
    }).finish();
    expect(decodeWorkflowTaskQueue(described)).toBe('tq-orders');
    expect(decodePendingActivities(described).map((p) => p.activityId)).toEqual(['a']);
    expect(decodeWorkflowTaskQueue(svc.DescribeWorkflowExecutionResponse.encode({ pendingActivities: [{ activityId: 'a' }] }).finish())).toBeNull();
    expect(decodePendingWorkflowTask(described)).toBeNull();
    const failing = svc.DescribeWorkflowExecutionResponse.encode({
      pendingActivities: [{ activityId: 'a', attempt: 9 }],
      pendingWorkflowTask: { state: 1, scheduledTime: google.protobuf.Timestamp.create({ seconds: Long.fromNumber(1_700_000_000) }), attempt: 7 },
    }).finish();
    expect(decodePendingWorkflowTask(failing)).toEqual({ attempt: 7 });
    const pollers = svc.DescribeTaskQueueResponse.encode({
      pollers: [
        { lastAccessTime: google.protobuf.Timestamp.create({ seconds: Long.fromNumber(1_700_000_000), nanos: 5_000_000 }), identity: '12@host', ratePerSecond: 100000 },
        { identity: 'never-polled' },
      ],
    }).finish();
    expect(decodePollers(pollers)).toEqual([
      { identity: '12@host', lastAccessMs: 1_700_000_000_005 },
      { identity: 'never-polled', lastAccessMs: null },
    ]);
  });

  it('payloads: json/plain and binary/null decode; other encodings are refused by name', () => {
    expect(payloadValue({ metadata: { encoding: 'binary/null' }, data: new Uint8Array(0) })).toBeNull();
    expect(payloadValue(undefined)).toBeUndefined();
    expect(() => payloadValue({ metadata: { encoding: 'binary/protobuf' }, data: new Uint8Array(0) })).toThrow(/"binary\/protobuf" is not supported/);
  });
});
