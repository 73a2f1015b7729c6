import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { inject } from 'vitest';
import type { Client } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import { installQuietRuntime } from '../../src/worker/runtime';
import { connectClient } from '../../src/client/connect';
import { TableClient } from '../../src/client/table-client';
import { createWorker } from '../../src/worker/create-worker';
import { testWorkflowBundle } from './workflow-bundle';
import { defaultIdentity } from '../../src/worker/fleet-memory';
import type { ActivityDeps } from '../../activities';
import { settleSealedHints } from '../../src/storage/sealed-hint';

// An integration-test harness against the real server of global-setup.ts: a temporary
// storage root, a unique task queue, real workers, a client. Names are unique per test.

export interface Harness {
  address: string;
  dataRoot: string;
  taskQueue: string;
  client: Client;
  tables: TableClient;
  workers: Worker[];
  /** Starts one more worker on the same task queue (workers scale horizontally). */
  addWorker(deps?: Partial<ActivityDeps>, opts?: { maxConcurrentActivities?: number }): Promise<Worker>;
  stopWorker(w: Worker): Promise<void>;
  close(): Promise<void>;
}

export const uniqueName = (prefix: string): string => `${prefix}-${randomUUID().slice(0, 8)}`;

export type StorageKind = 'fs' | 's3';

/** The backends tests that must hold on both run on (describe.each(STORAGES)). */
export const STORAGES: StorageKind[] = ['fs', 's3'];

/**
 * A fresh storage root: a temporary directory, or a fresh prefix in the bucket of the
 * run's SeaweedFS (whose endpoint and credentials go into this process's environment,
 * where Turnstile and Lance read them, and so into any worker process a test spawns).
 */
export function freshDataRoot(name: string, storage: StorageKind = 'fs'): string {
  if (storage === 'fs') return fs.mkdtempSync(path.join(os.tmpdir(), `turnstile-${name}-`));
  const s3 = inject('s3');
  Object.assign(process.env, s3.env);
  return `s3://${s3.bucket}/${uniqueName(name)}`;
}

export async function startHarness(opts: { name: string; deps?: Partial<ActivityDeps>; workers?: number; storage?: StorageKind }): Promise<Harness> {
  installQuietRuntime();
  const address = inject('temporalAddress');
  const dataRoot = freshDataRoot(opts.name, opts.storage);
  const taskQueue = uniqueName(`tq-${opts.name}`);
  const client = await connectClient({ address, namespace: 'default' });
  const running = new Map<Worker, { done: Promise<void>; close: () => Promise<void> }>();
  const bundle = await testWorkflowBundle();

  let added = 0;
  const addWorker = async (deps?: Partial<ActivityDeps>, workerOpts: { maxConcurrentActivities?: number } = {}): Promise<Worker> => {
    const { worker, connection } = await createWorker({
      ...workerOpts,
      // One identity per worker: histories tell which one ran each task.
      identity: `${defaultIdentity()}/w${added++}`,
      address,
      namespace: 'default',
      taskQueue,
      bundle,
      deps: { dataRoot, ...opts.deps, ...deps },
      shutdownGraceSecs: 2,
    });
    const done = worker.run();
    running.set(worker, { done, close: () => connection.close() });
    return worker;
  };
  const stopWorker = async (w: Worker): Promise<void> => {
    const r = running.get(w);
    if (!r) return;
    running.delete(w);
    if (w.getState() === 'RUNNING') w.shutdown();
    await r.done.catch(() => undefined);
    await r.close();
  };
  for (let i = 0; i < (opts.workers ?? 1); i++) await addWorker();

  return {
    address,
    dataRoot,
    taskQueue,
    client,
    tables: new TableClient(client, taskQueue),
    get workers() {
      return [...running.keys()];
    },
    addWorker,
    stopWorker,
    async close() {
      for (const w of [...running.keys()]) await stopWorker(w);
      await client.connection.close();
      await settleSealedHints(); // a hint written in the background would race the removal
      if (opts.storage !== 's3') fs.rmSync(dataRoot, { recursive: true, force: true }); // S3: the run's server is scratch
    },
  };
}

/**
 * Waits for a condition: polls `fn` until it returns a truthy value (which it returns),
 * within `timeoutMs`. Errors thrown by `fn` count as "not yet" (a query may fail while a
 * workflow starts or a server restarts) and the last one is named on timeout.
 *
 * `fn` must not assert: an assertion inside a poll would pass as soon as it holds once,
 * and a regression would fail only if it lasted the whole timeout. Collect what the poll
 * saw and assert on it afterwards, once. An assertion error thrown inside `fn` fails the
 * wait at once instead of being retried.
 */
export async function eventually<T>(fn: () => Promise<T | undefined | null | false>, what: string, timeoutMs = 60_000, everyMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      if (isAssertion(e)) throw e;
      last = e;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}

const isAssertion = (e: unknown): boolean => e instanceof Error && e.name === 'AssertionError';
