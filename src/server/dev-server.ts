import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { SEARCH_ATTRIBUTE_FLAGS } from '../../workflows/search-attributes';

// Starts `temporal server start-dev` (built by scripts/ensure-temporal.mjs) with SQLite
// persistence in WAL mode, the project's search attributes and, unless headless, the
// Web UI. The child dies with us: stop() on shutdown, and a synchronous kill on exit so
// no server is left orphaned when the parent crashes.

/**
 * Server settings Turnstile relies on (set them on a cluster too, see README):
 * eager activity execution hands an activity scheduled by a workflow task straight
 * back to the worker that completed the task (skipping a matching round trip on each
 * preparation and commit, so a turn changes hands sooner; a worker with a memory budget
 * takes one only into a free slot, src/worker/memory-slots.ts); and a table workflow may have
 * 100 updates in flight instead of 10, so waiting writers (one awaitMerged per process
 * and shard, each answered within 20 s) and buggy clients leave slots for operators'
 * `policy --set` (issue 11). Last, `temporal server start-dev` turns on
 * system.forceSearchAttributesCacheRefreshOnRead (so that search attributes created at
 * run time show at once): every read of the search attributes, i.e. every upsert and
 * every workflow task that carries one, then reads the cluster metadata from SQLite
 * (~140 reads a second with 500 tables, bench/README.md). Ours are all registered at
 * start (--search-attribute), so the cache may stay on, as in production. And the
 * matcher that honours task priorities: a commit (it holds its table's turn) is handed
 * to the next free worker slot ahead of queued preparations and scans, so its wait in
 * the queue means "no worker has headroom", not "the queue is long".
 */
export const DEV_DYNAMIC_CONFIG: Record<string, unknown> = {
  'system.enableActivityEagerExecution': true,
  'history.maxInFlightUpdates': 100,
  'system.forceSearchAttributesCacheRefreshOnRead': false,
  // Task priorities (commits ahead of preparations and scans; workflows/run-unit.ts).
  'matching.useNewMatcher': true,
};

/** What DEV_DYNAMIC_CONFIG was before the many-tables work (bench comparison only). */
const LEGACY_DEV_DYNAMIC_CONFIG: Record<string, unknown> = {
  'system.enableActivityEagerExecution': true,
  'history.maxInFlightUpdates': 100,
};

export interface DevServerOptions {
  binary: string;
  /** SQLite file; the directory is created. */
  dbFile: string;
  port?: number;
  uiPort?: number;
  headless?: boolean;
  logFile?: string;
  /** Port of the server's own Prometheus endpoint (default: a free one). */
  metricsPort?: number;
  /**
   * Benchmarks only: start-dev's own settings instead of ours (SQLite synchronous=full,
   * search attribute cache bypassed), to measure what ours buy.
   */
  startDevDefaults?: boolean;
}

export interface DevServer {
  address: string;
  uiUrl: string | null;
  /** The server's own Prometheus metrics (its frontend, history and persistence). */
  metricsUrl: string;
  pid: number;
  stop(): Promise<void>;
}

export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, host, () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** A server process ended before it answered: worth starting again (startAgainIfExited). */
export class ExitedBeforeServingError extends Error {}

async function waitUntilServing(address: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new ExitedBeforeServingError(`temporal server exited with code ${child.exitCode} before serving`);
    try {
      const conn = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await conn.workflowService.getSystemInfo({});
        await conn.workflowService.describeNamespace({ namespace: 'default' });
        return;
      } finally {
        await conn.close();
      }
    } catch (e) {
      lastError = e;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw new Error(`temporal server at ${address} did not answer within ${timeoutMs} ms: ${String(lastError)}`);
}

/**
 * A process killed outright (SIGKILL, a closed pipe) runs no exit handler, so a small
 * detached shell watches us and stops the server once we are gone: no orphan server
 * keeps the port or the database.
 */
export function watchParent(serverPid: number): ChildProcess {
  const script = `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; kill -TERM ${serverPid} 2>/dev/null; sleep 10; kill -0 ${serverPid} 2>/dev/null && kill -KILL ${serverPid}`;
  const w = spawn('/bin/sh', ['-c', script], { detached: true, stdio: 'ignore' });
  w.unref();
  return w;
}

/**
 * Ports are found free a moment before a server binds them (start-dev also binds ports
 * of its own choosing); with several servers starting at once one can be taken
 * meanwhile and the server exits ("bind: address already in use"). It is started again
 * then, with fresh ports. A fresh-clone CI run failed once this way.
 */
const START_ATTEMPTS = 3;

export async function startAgainIfExited<T>(start: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (e) {
      if (attempt >= START_ATTEMPTS || !(e instanceof ExitedBeforeServingError)) throw e;
    }
  }
}

/** A server process in its own process group, killed when we exit or die (watchParent). */
export function spawnOwned(binary: string, args: string[], logFile: string | undefined): { child: ChildProcess; watchdog: ChildProcess; killNow: () => void } {
  const out = logFile ? fs.openSync(logFile, 'a') : 'ignore';
  // Its own process group: a terminal's Ctrl-C reaches us, and we stop the server only
  // after the workers have drained (they still talk to it while shutting down).
  const child = spawn(binary, args, { stdio: ['ignore', out, out], detached: true });
  const watchdog = watchParent(child.pid!);
  const killNow = () => {
    child.kill('SIGKILL');
    watchdog.kill('SIGKILL');
  };
  process.on('exit', killNow);
  return { child, watchdog, killNow };
}

export function startDevServer(opts: DevServerOptions): Promise<DevServer> {
  return startAgainIfExited(() => startOnce(opts));
}

async function startOnce(opts: DevServerOptions): Promise<DevServer> {
  const port = opts.port ?? (await freePort());
  const uiPort = opts.uiPort ?? (await freePort());
  const metricsPort = opts.metricsPort ?? (await freePort());
  fs.mkdirSync(path.dirname(opts.dbFile), { recursive: true });
  const args = [
    'server', 'start-dev',
    '--ip', '127.0.0.1',
    '--port', String(port),
    '--db-filename', opts.dbFile,
    '--sqlite-pragma', 'journal_mode=wal',
    // SQLite admits one writer at a time, and with the default synchronous=FULL every
    // transaction waits for an fsync of the WAL (2.5-3.6 ms on this machine's disk):
    // that made the dev server the limit of many-tables (bench/README.md). NORMAL syncs
    // the WAL at checkpoints only: a killed server process loses nothing (the WAL is in
    // the OS), an OS crash or power loss may lose the last transactions.
    ...(opts.startDevDefaults ? [] : ['--sqlite-pragma', 'synchronous=normal']),
    '--log-level', 'warn',
    '--metrics-port', String(metricsPort),
    ...SEARCH_ATTRIBUTE_FLAGS.flatMap((sa) => ['--search-attribute', sa]),
    ...Object.entries(opts.startDevDefaults ? LEGACY_DEV_DYNAMIC_CONFIG : DEV_DYNAMIC_CONFIG).flatMap(([k, v]) => ['--dynamic-config-value', `${k}=${JSON.stringify(v)}`]),
    ...(opts.headless ? ['--headless'] : ['--ui-port', String(uiPort)]),
  ];
  const { child, watchdog, killNow } = spawnOwned(opts.binary, args, opts.logFile);
  const address = `127.0.0.1:${port}`;
  try {
    // Generous: the first start on a fresh machine maps a 250 MB binary from a cold page
    // cache while the rest of the first run still builds (measured: 96 s under such load).
    await waitUntilServing(address, child, 180_000);
  } catch (e) {
    killNow();
    process.off('exit', killNow);
    throw e;
  }
  return {
    address,
    uiUrl: opts.headless ? null : `http://127.0.0.1:${uiPort}`,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    pid: child.pid!,
    async stop() {
      process.off('exit', killNow);
      watchdog.kill('SIGKILL');
      if (child.exitCode !== null) return;
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      const timer = setTimeout(killNow, 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
