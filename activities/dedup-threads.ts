import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { DedupReply, DedupRequest } from './dedup-protocol';

// Threads that do the CPU work of preparations (dedup-thread.ts): checksum, decode,
// dedup, encode. On the worker's one JavaScript thread that work (about 1 s of CPU per
// 1.2M rows) delayed every workflow task, heartbeat and commit of the worker, and two
// preparations could only take turns. A worker starts (and warms up) its threads before
// it polls; elsewhere they start on first use. They are shared by all preparations of
// the process (each job stays on the thread it started on: its dedup state lives
// there), and do not keep the process alive.

interface Slot {
  worker: Worker;
  /** Settles when the thread has loaded (and warmed up, when start() made it). */
  ready: Promise<unknown>;
  pending: Map<number, { resolve: (r: DedupReply) => void; reject: (e: Error) => void }>;
  jobs: number;
  dead?: Error;
}

/** The thread's script: the compiled one beside dist/cli.js, or the TypeScript source through tsx (development, tests). */
function startThread(): Worker {
  const here = typeof __filename === 'string' ? __filename : path.join(process.cwd(), 'activities', 'dedup-threads.ts');
  if (here.endsWith('.js')) return new Worker(path.join(path.dirname(here), 'dedup-thread.js'));
  const req = createRequire(here);
  const boot = `require(${JSON.stringify(req.resolve('tsx/cjs'))}); require(${JSON.stringify(path.join(path.dirname(here), 'dedup-thread.ts'))});`;
  return new Worker(boot, { eval: true });
}

/**
 * Rows of each of the two made-up generations a thread started by start() prepares
 * first. Measured (bench/README.md): a worker's first 2 x 4 x 150k merge
 * took 1.24-1.40 s of worker CPU after a warm-up of 100k rows against 1.54-1.73 s
 * without; 30k rows gave the same wall times for ~40 MiB less peak RSS.
 */
export const WARM_UP_ROWS = 30_000;

/**
 * Threads by default: one fewer than the cores (the worker's own thread needs one), at
 * most four; none on one or two cores. On two cores a thread took ~10% off a large merge
 * but had no core of its own, and 1,000 small tables on two workers fell behind with it
 * in the one pair of runs measured (bench/README.md).
 */
export const defaultDedupThreads = (cores: number): number => (cores >= 3 ? Math.min(4, cores - 1) : 0);

let shared: DedupThreads | undefined;

/**
 * The process's dedup threads, made by the first caller with its size: every worker and
 * activity set of a process shares them (tests make many workers in one process; one
 * worker per process is the deployed shape).
 */
export function processDedupThreads(size: number): DedupThreads {
  shared ??= new DedupThreads(size);
  return shared;
}

/** The threads a worker's activities use: the ones handed in, else the process's (sized by `count`, default by the cores), or none for a count of 0. */
export function dedupThreadsFor(deps: { dedupThreads?: DedupThreads; dedupThreadCount?: number }): DedupThreads | undefined {
  const count = deps.dedupThreadCount ?? defaultDedupThreads(availableParallelism());
  return deps.dedupThreads ?? (count > 0 ? processDedupThreads(count) : undefined);
}

export class DedupThreads {
  private readonly slots: Slot[] = [];
  private nextId = 1;
  private nextJob = 1;

  constructor(readonly size: number) {}

  /** A new job on the thread with the fewest jobs (a dead thread is replaced). */
  job(key: string, expectedSources: number): DedupJob {
    this.prune();
    let slot = this.slots.length < this.size ? undefined : this.slots.reduce((a, b) => (b.jobs < a.jobs ? b : a));
    if (!slot) {
      slot = this.spawn(false);
      this.slots.push(slot);
    }
    return new DedupJob(this, slot, this.nextJob++, key, expectedSources);
  }

  /** Sends `req` to the slot's thread; transfers nothing (bytes are shared memory). */
  request(slot: Slot, req: DedupRequest): Promise<DedupReply> {
    if (slot.dead) return Promise.reject(slot.dead);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      // Kept alive while it has work, so a caller awaiting only this reply is not cut short.
      if (slot.pending.size === 0) slot.worker.ref();
      slot.pending.set(id, { resolve, reject });
      slot.worker.postMessage({ id, req });
    });
  }

  /**
   * Starts the threads not yet running and resolves once every thread has loaded its
   * code; the ones started here also run WARM_UP_ROWS made-up rows through a
   * preparation first. A worker calls it before it polls: a thread started by its first
   * job makes that job wait for the load (~0.2 s) and run cold.
   */
  async start(): Promise<void> {
    this.prune();
    while (this.slots.length < this.size) this.slots.push(this.spawn(true));
    await Promise.all(this.slots.map((s) => s.ready));
  }

  async close(): Promise<void> {
    await Promise.all(this.slots.splice(0).map((s) => s.worker.terminate()));
  }

  private prune(): void {
    for (let i = this.slots.length - 1; i >= 0; i--) if (this.slots[i]!.dead) this.slots.splice(i, 1);
  }

  private spawn(warmUp: boolean): Slot {
    const worker = startThread();
    const slot: Slot = { worker, pending: new Map(), jobs: 0, ready: Promise.resolve() };
    worker.unref();
    worker.on('message', (m: { id: number; reply: DedupReply }) => {
      const p = slot.pending.get(m.id);
      slot.pending.delete(m.id);
      if (slot.pending.size === 0) worker.unref();
      p?.resolve(m.reply);
    });
    const die = (err: Error) => {
      slot.dead ??= err;
      for (const p of slot.pending.values()) p.reject(slot.dead);
      slot.pending.clear();
    };
    worker.on('error', (err) => die(new Error(`dedup thread failed: ${err.message}`)));
    worker.on('exit', (code) => die(new Error(`dedup thread exited (code ${code})`)));
    slot.ready = this.request(slot, warmUp ? { op: 'warm-up', rows: WARM_UP_ROWS } : { op: 'end', job: 0 });
    slot.ready.catch(() => undefined); // awaited by start() only; a death is also every later request's error
    return slot;
  }
}

/** One preparation's dedup on a thread. */
export class DedupJob {
  private ended = false;

  constructor(
    private readonly threads: DedupThreads,
    private readonly slot: Slot,
    private readonly id: number,
    private readonly key: string,
    private readonly expectedSources: number,
  ) {
    slot.jobs++;
  }

  /** Adds a file's bytes, which must be shared memory that stays lent until end(). */
  add(file: string, seq: number | null, bytes: Buffer, verified = false): Promise<DedupReply> {
    if (!(bytes.buffer instanceof SharedArrayBuffer)) throw new Error('DedupJob.add: the bytes must be in shared memory (withSharedScratch)');
    return this.threads.request(this.slot, { op: 'add', job: this.id, key: this.key, expectedSources: this.expectedSources, file, seq, bytes, verified });
  }

  build(): Promise<DedupReply> {
    return this.threads.request(this.slot, { op: 'build', job: this.id });
  }

  /** Frees the job's state on its thread (not awaited: the thread answers in order). */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.slot.jobs--;
    this.threads.request(this.slot, { op: 'end', job: this.id }).catch(() => undefined);
  }
}
