import { parentPort } from 'node:worker_threads';
import { decodeVerifiedIpc, ipcShapeProblem } from '../src/storage/arrow';
import { fastHashReady } from '../src/storage/fast-hash';
import { embeddedChecksumProblem } from '../src/storage/ipc-checksum';
import { finishedBytes } from '../src/storage/storage';
import type { DedupReply, DedupRequest } from './dedup-protocol';
import { NewestRowPerKey } from './newest-row-per-key';
import { generationProblem } from './validate-generation';
import { warmUpGenerations } from './warm-up-preparation';

// The body of a dedup thread (dedup-threads.ts starts it): it checksums, decodes,
// deduplicates and encodes the generations of preparations, so that this CPU work runs
// beside the worker's JavaScript thread (which carries every workflow task, heartbeat
// and commit) instead of on it, and two preparations run on two cores. It does no I/O:
// the worker reads the files into shared memory and writes what comes back.

interface Job {
  acc: NewestRowPerKey;
  key: string;
}

const jobs = new Map<number, Job>();

type Add = Extract<DedupRequest, { op: 'add' }>;

function add(req: Add): DedupReply {
  let job = jobs.get(req.job);
  if (!job) {
    job = { acc: new NewestRowPerKey(req.key, req.expectedSources), key: req.key };
    jobs.set(req.job, job);
  }
  const t = performance.now();
  const buf = Buffer.from(req.bytes.buffer, req.bytes.byteOffset, req.bytes.byteLength);
  const shape = ipcShapeProblem(buf);
  if (shape) return { kind: 'corrupt', reason: shape };
  if (!req.verified) {
    // Checked before decoding: Arrow's decoder can spin for seconds on a damaged length.
    const changed = embeddedChecksumProblem(buf);
    if (changed === undefined) return { kind: 'no-checksum' };
    if (changed) return { kind: 'corrupt', reason: changed };
  }
  const decoded = decodeVerifiedIpc(buf);
  if ('problem' in decoded) return { kind: 'corrupt', reason: decoded.problem };
  const problem = generationProblem(decoded.table, job.key, req.seq, job.acc.schema);
  if (problem) return { kind: 'invalid', problem };
  const verifyMs = performance.now() - t;
  job.acc.add(decoded.table);
  return { kind: 'added', rowsRead: job.acc.rowsRead, verifyMs, dedupeMs: performance.now() - t - verifyMs };
}

async function build(req: { job: number }): Promise<{ reply: DedupReply; transfer: ArrayBuffer[] }> {
  const t = performance.now();
  // Memory of its own (allocUnsafeSlow: never a slice of Node's shared pool), handed over whole.
  const encoded = (await jobs.get(req.job)?.acc.encodeYielding((n) => Buffer.allocUnsafeSlow(n))) ?? null;
  if (!encoded) return { reply: { kind: 'built', ipc: null, rows: 0, dedupeMs: performance.now() - t, encodeMs: 0 }, transfer: [] };
  const ipc = (await finishedBytes(encoded.pending)) as Buffer;
  const ab = ipc.buffer as ArrayBuffer;
  // Gathering the winners and encoding them are one pass now: all of it counts as encoding.
  const reply: DedupReply = { kind: 'built', ipc: new Uint8Array(ab, ipc.byteOffset, ipc.byteLength), rows: encoded.rows, dedupeMs: 0, encodeMs: performance.now() - t };
  return { reply, transfer: [ab] };
}

/** The made-up generations of warm-up-preparation.ts through add, build and encode, as a preparation would. */
async function warmUp(rows: number): Promise<DedupReply> {
  const job = -1;
  for (const { seq, ipc } of await warmUpGenerations(rows)) {
    const bytes = Buffer.from(new SharedArrayBuffer(ipc.byteLength));
    ipc.copy(bytes);
    const r = add({ op: 'add', job, key: 'id', expectedSources: 2, file: 'warm-up', seq, bytes, verified: false });
    if (r.kind !== 'added') throw new Error(`warm-up: ${JSON.stringify(r)}`);
  }
  await build({ job });
  jobs.delete(job);
  return { kind: 'ended' };
}

async function handle(req: DedupRequest): Promise<{ reply: DedupReply; transfer: ArrayBuffer[] }> {
  if (req.op === 'add') return { reply: add(req), transfer: [] };
  if (req.op === 'build') return build(req);
  if (req.op === 'warm-up') return { reply: await warmUp(req.rows), transfer: [] };
  jobs.delete(req.job);
  return { reply: { kind: 'ended' }, transfer: [] };
}

// Requests are answered one at a time, in order: a job's build never overtakes its adds.
// The first waits for the checksum's WebAssembly (add verifies synchronously).
let queue: Promise<void> = fastHashReady.catch(() => undefined);
parentPort?.on('message', (msg: { id: number; req: DedupRequest }) => {
  queue = queue.then(async () => {
    const out = await handle(msg.req).catch((err: unknown) => ({ reply: { kind: 'error', message: err instanceof Error ? err.message : String(err) } as DedupReply, transfer: [] }));
    parentPort!.postMessage({ id: msg.id, reply: out.reply }, out.transfer);
  });
});
