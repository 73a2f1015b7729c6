import * as pb from 'protobufjs/minimal';

// The few Temporal API messages the read-only CLI commands exchange, encoded and
// decoded by hand with protobufjs/minimal (~25 ms to load) instead of through
// @temporalio/client, whose full proto root takes ~400 ms to load: that alone kept
// `turnstile status` above half a second. Field numbers are those of
// temporal/api (workflowservice/v1/request_response.proto, workflow/v1/message.proto,
// common/v1/message.proto); unknown fields are skipped, so newer servers decode fine.

const VARINT = 0;
const LEN = 2;
const tag = (field: number, wire: number): number => (field << 3) | wire;

/** WorkflowExecution { workflow_id = 1 } inside a request's field 2; namespace is field 1. */
function withExecution(w: pb.Writer, namespace: string, workflowId: string): pb.Writer {
  w.uint32(tag(1, LEN)).string(namespace);
  w.uint32(tag(2, LEN)).fork().uint32(tag(1, LEN)).string(workflowId).ldelim();
  return w;
}

/** QueryWorkflowRequest { namespace = 1; execution = 2; query = 3 { query_type = 1 } }. */
export function encodeQueryRequest(namespace: string, workflowId: string, queryType: string): Uint8Array {
  const w = withExecution(pb.Writer.create(), namespace, workflowId);
  w.uint32(tag(3, LEN)).fork().uint32(tag(1, LEN)).string(queryType).ldelim();
  return w.finish();
}

/** DescribeTaskQueueRequest { namespace = 1; task_queue = 2 { name = 1; kind = 2 (NORMAL = 1) }; task_queue_type = 3 (WORKFLOW = 1) }. */
export function encodeDescribeTaskQueueRequest(namespace: string, taskQueue: string): Uint8Array {
  const w = pb.Writer.create();
  w.uint32(tag(1, LEN)).string(namespace);
  w.uint32(tag(2, LEN)).fork().uint32(tag(1, LEN)).string(taskQueue).uint32(tag(2, VARINT)).int32(1).ldelim();
  w.uint32(tag(3, VARINT)).int32(1);
  return w.finish();
}

/** DescribeWorkflowExecutionRequest { namespace = 1; execution = 2 }. */
export const encodeDescribeRequest = (namespace: string, workflowId: string): Uint8Array => withExecution(pb.Writer.create(), namespace, workflowId).finish();

export interface WirePayload {
  metadata: Record<string, string>;
  data: Uint8Array;
}

/** Calls `onField(field, reader)` for each field of the message in `r` up to `end`; it returns false to skip one. */
function eachField(r: pb.Reader, end: number, onField: (field: number, r: pb.Reader) => boolean): void {
  while (r.pos < end) {
    const t = r.uint32();
    if (!onField(t >>> 3, r)) r.skipType(t & 7);
  }
}

/** Payload { map<string, bytes> metadata = 1; bytes data = 2 }. */
function decodePayload(r: pb.Reader, end: number): WirePayload {
  const p: WirePayload = { metadata: {}, data: new Uint8Array(0) };
  eachField(r, end, (f) => {
    if (f === 1) {
      const entryEnd = r.uint32() + r.pos;
      let key = '';
      let value = '';
      eachField(r, entryEnd, (ef) => {
        if (ef === 1) key = r.string();
        else if (ef === 2) value = Buffer.from(r.bytes()).toString('utf8');
        else return false;
        return true;
      });
      p.metadata[key] = value;
      return true;
    }
    if (f === 2) {
      p.data = r.bytes();
      return true;
    }
    return false;
  });
  return p;
}

/** Payloads { repeated Payload payloads = 1 }. */
function decodePayloads(r: pb.Reader, end: number): WirePayload[] {
  const out: WirePayload[] = [];
  eachField(r, end, (f) => {
    if (f !== 1) return false;
    const len = r.uint32();
    out.push(decodePayload(r, r.pos + len));
    return true;
  });
  return out;
}

export interface QueryAnswer {
  result: WirePayload[];
  /** Set when the server rejected the query (query_rejected.status, a WorkflowExecutionStatus). */
  rejectedStatus: number | null;
}

/** QueryWorkflowResponse { Payloads query_result = 1; QueryRejected query_rejected = 2 { status = 1 } }. */
export function decodeQueryResponse(bytes: Uint8Array): QueryAnswer {
  const r = pb.Reader.create(bytes);
  const answer: QueryAnswer = { result: [], rejectedStatus: null };
  eachField(r, r.len, (f) => {
    if (f === 1) {
      const len = r.uint32();
      answer.result = decodePayloads(r, r.pos + len);
      return true;
    }
    if (f === 2) {
      const end = r.uint32() + r.pos;
      answer.rejectedStatus = 0;
      eachField(r, end, (rf) => {
        if (rf !== 1) return false;
        answer.rejectedStatus = r.int32();
        return true;
      });
      return true;
    }
    return false;
  });
  return answer;
}

export interface WirePendingActivity {
  activityId: string;
  heartbeatDetails: WirePayload[];
  lastHeartbeatMs: number | null;
  attempt: number;
  /** PendingActivityState: 1 scheduled (no worker has taken it), 2 started, 3 cancel requested, 4 paused. */
  state: number;
  lastWorkerIdentity: string | null;
}

/** google.protobuf.Timestamp { int64 seconds = 1; int32 nanos = 2 } as epoch ms. */
function decodeTimestampMs(r: pb.Reader, end: number): number {
  let seconds = 0;
  let nanos = 0;
  eachField(r, end, (f) => {
    if (f === 1) seconds = Number(r.int64().toString());
    else if (f === 2) nanos = r.int32();
    else return false;
    return true;
  });
  return seconds * 1000 + Math.floor(nanos / 1e6);
}

/** PendingActivityInfo { activity_id = 1; state = 3; heartbeat_details = 4; last_heartbeat_time = 5; attempt = 7; last_worker_identity = 12 }. */
function decodePendingActivity(r: pb.Reader, end: number): WirePendingActivity {
  const a: WirePendingActivity = { activityId: '', heartbeatDetails: [], lastHeartbeatMs: null, attempt: 1, state: 0, lastWorkerIdentity: null };
  eachField(r, end, (f) => {
    if (f === 1) a.activityId = r.string();
    else if (f === 3) a.state = r.int32();
    else if (f === 12) a.lastWorkerIdentity = r.string() || null;
    else if (f === 4) a.heartbeatDetails = decodePayloads(r, r.uint32() + r.pos);
    else if (f === 5) a.lastHeartbeatMs = decodeTimestampMs(r, r.uint32() + r.pos);
    else if (f === 7) a.attempt = r.int32();
    else return false;
    return true;
  });
  return a;
}

/** DescribeWorkflowExecutionResponse { repeated PendingActivityInfo pending_activities = 3 }, the rest skipped. */
export function decodePendingActivities(bytes: Uint8Array): WirePendingActivity[] {
  const r = pb.Reader.create(bytes);
  const out: WirePendingActivity[] = [];
  eachField(r, r.len, (f) => {
    if (f !== 3) return false;
    out.push(decodePendingActivity(r, r.uint32() + r.pos));
    return true;
  });
  return out;
}

/** The value of the first `field` of the message in `r` up to `end` that holds a nested message, as its [start, end), or null. */
function nested(r: pb.Reader, end: number, field: number): [number, number] | null {
  let found: [number, number] | null = null;
  eachField(r, end, (f) => {
    if (f !== field || found) return false;
    const len = r.uint32();
    found = [r.pos, r.pos + len];
    r.skip(len);
    return true;
  });
  return found;
}

/** DescribeWorkflowExecutionResponse { execution_config = 1 { task_queue = 1 { name = 1 } } }: the run's task queue, or null. */
export function decodeWorkflowTaskQueue(bytes: Uint8Array): string | null {
  const r = pb.Reader.create(bytes);
  const config = nested(r, r.len, 1);
  if (!config) return null;
  r.pos = config[0];
  const queue = nested(r, config[1], 1);
  if (!queue) return null;
  r.pos = queue[0];
  let name: string | null = null;
  eachField(r, queue[1], (f) => {
    if (f !== 1) return false;
    name = r.string();
    return true;
  });
  return name;
}

export interface WirePendingWorkflowTask {
  attempt: number;
}

/** DescribeWorkflowExecutionResponse { pending_workflow_task = 5 { attempt = 5 } }, or null when none is pending. */
export function decodePendingWorkflowTask(bytes: Uint8Array): WirePendingWorkflowTask | null {
  const r = pb.Reader.create(bytes);
  const task = nested(r, r.len, 5);
  if (!task) return null;
  r.pos = task[0];
  const t: WirePendingWorkflowTask = { attempt: 1 };
  eachField(r, task[1], (f) => {
    if (f !== 5) return false;
    t.attempt = r.int32();
    return true;
  });
  return t;
}

export interface WirePoller {
  identity: string;
  lastAccessMs: number | null;
}

/** DescribeTaskQueueResponse { repeated PollerInfo pollers = 1 { last_access_time = 1; identity = 2 } }. */
export function decodePollers(bytes: Uint8Array): WirePoller[] {
  const r = pb.Reader.create(bytes);
  const out: WirePoller[] = [];
  eachField(r, r.len, (f) => {
    if (f !== 1) return false;
    const end = r.uint32() + r.pos;
    const p: WirePoller = { identity: '', lastAccessMs: null };
    eachField(r, end, (pf) => {
      if (pf === 1) p.lastAccessMs = decodeTimestampMs(r, r.uint32() + r.pos);
      else if (pf === 2) p.identity = r.string();
      else return false;
      return true;
    });
    out.push(p);
    return true;
  });
  return out;
}
