import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { registerNamespace } from '../cluster/namespace';
import { renderDynamicConfig } from '../cluster/node-config';
import { renderUiConfig } from '../cluster/ui-config';
import { PROJECT_ROOT } from '../util/project-paths';
import { DEV_FREE_PORT_NAMES, renderDevConfig, type DevPorts } from './dev-config';
import { sleep } from '../util/sleep';

// The embedded default: the real Temporal server (go.temporal.io/server/cmd/server, built
// by scripts/ensure-temporal.mjs) with every service in one process on one SQLite file
// in WAL mode (src/server/dev-config.ts), namespace `default` and the project's search
// attributes registered at start, and, unless headless, the Temporal UI server in front
// of it. Both children die with us: stop() on shutdown, and a synchronous kill on exit
// so no server is left orphaned when the parent crashes.

/**
 * Server settings Turnstile relies on (set them on a cluster too, see README):
 * eager activity execution hands an activity scheduled by a workflow task straight
 * back to the worker that completed the task (skipping a matching round trip on each
 * preparation and commit, so a turn changes hands sooner; a worker with a memory budget
 * takes one only into a free slot, src/worker/memory-slots.ts); and a table workflow may have
 * 100 updates in flight instead of 10, so waiting writers (one awaitMerged per process
 * and shard, each answered within 20 s) and buggy clients leave slots for operators'
 * `policy --set`. Last, `temporal server start-dev` (which ran the dev server
 * before) turned on system.forceSearchAttributesCacheRefreshOnRead (so that search
 * attributes created at run time show at once): every read of the search attributes,
 * i.e. every upsert and every workflow task that carries one, then read the cluster
 * metadata from SQLite (~140 reads a second with 500 tables, bench/README.md). Ours are
 * all registered at start, so the cache stays on, as in production (false is also the
 * server's own default; it is written out so a cluster's file says so). And the
 * matcher that honours task priorities: a commit (it holds its table's turn) is handed
 * to the next free worker slot ahead of queued preparations and scans, so its wait in
 * the queue means "no worker has headroom", not "the queue is long".
 *
 * Worker Deployment versions (upgrades, README): a version that is neither current nor
 * ramping reports "draining" until visibility shows no open run pinned to it, then
 * "drained". The server re-checks that every VersionDrainageStatusRefreshInterval,
 * after a VersionDrainageStatusVisibilityGracePeriod (both 3 min by default): 5 s each
 * here, so an upgrade's old version shows drained seconds after its last run moved. And
 * pinned runs are told when their deployment's current version moves away
 * (`workflowInfo().targetWorkerDeploymentVersionChanged`, server >= 1.30.2; on by
 * default in 1.32, written out because pinned table runs need it to move to the new
 * version at continue-as-new, DESIGN.md "Releases and upgrades").
 *
 * What start-dev set that Turnstile relies on is default in server 1.32: updates
 * (frontend.enableUpdateWorkflowExecution and ...AsyncAccepted), update-with-start
 * (ExecuteMultiOperation, no longer a setting), eager workflow start, deployment
 * versions and their workflow APIs.
 */
export const DEV_DYNAMIC_CONFIG: Record<string, unknown> = {
  'system.enableActivityEagerExecution': true,
  'history.maxInFlightUpdates': 100,
  'system.forceSearchAttributesCacheRefreshOnRead': false,
  // Task priorities (commits ahead of preparations and scans; workflows/run-unit.ts).
  'matching.useNewMatcher': true,
  'matching.wv.VersionDrainageStatusVisibilityGracePeriod': '5s',
  'matching.wv.VersionDrainageStatusRefreshInterval': '5s',
  'system.enableSendTargetVersionChanged': true,
};

/**
 * What the dev server ran with before the many-tables work, i.e. `temporal server
 * start-dev`'s own settings: the search-attribute cache bypassed (bench comparison only).
 */
const LEGACY_DEV_DYNAMIC_CONFIG: Record<string, unknown> = {
  'system.enableActivityEagerExecution': true,
  'history.maxInFlightUpdates': 100,
  'system.forceSearchAttributesCacheRefreshOnRead': true,
};

export interface DevServerOptions {
  /** The Temporal server binary (go.temporal.io/server/cmd/server). */
  binary: string;
  /** The Temporal UI server binary (default: TEMPORAL_UI_SERVER_PATH, else built and cached by scripts/ensure-cluster.mjs); not used when headless. */
  uiBinary?: string;
  /** SQLite file; the directory is created. The server's config files go to `<dbFile>.server/`. */
  dbFile: string;
  /** The frontend's gRPC port (default: a free one); every other service port is a free one. */
  port?: number;
  uiPort?: number;
  headless?: boolean;
  /** The server's output; the UI server's goes to the same name with `.ui` before the extension. */
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
  /** The Temporal server process. */
  pid: number;
  /** The UI server process (null when headless). */
  uiPid: number | null;
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

/** N distinct free ports: all held open at once, so none is handed out twice. */
async function freePorts(n: number, host = '127.0.0.1'): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: n }, () =>
      new Promise<net.Server>((resolve, reject) => {
        const srv = net.createServer();
        srv.unref();
        srv.on('error', reject);
        srv.listen(0, host, () => resolve(srv));
      }),
    ),
  );
  const ports = servers.map((srv) => (srv.address() as net.AddressInfo).port);
  await Promise.all(servers.map((srv) => new Promise((r) => srv.close(r))));
  return ports;
}

/** Whether every port is free on `host` now (none is held open afterwards). */
async function portsFree(ports: number[], host = '127.0.0.1'): Promise<boolean> {
  const results = await Promise.all(
    ports.map(
      (port) =>
        new Promise<net.Server | null>((resolve) => {
          const srv = net.createServer();
          srv.once('error', () => resolve(null));
          srv.listen(port, host, () => resolve(srv));
        }),
    ),
  );
  await Promise.all(results.map((srv) => srv && new Promise((r) => srv.close(r))));
  return results.every((srv) => srv !== null);
}

interface DevPortChoice {
  ports: DevPorts;
  uiPort: number;
}

/**
 * The ports of a server on this database: those it had last time when they are all free,
 * else fresh ones (the requested ones either way). The server finds its peers through the
 * database's membership table, which keeps the last run's addresses for a while: a
 * restart on other ports spent about a minute with services that could not find each
 * other ("Not enough hosts to serve the request") before the stale entries expired.
 */
async function choosePorts(opts: DevServerOptions, portsFile: string, reuse: boolean): Promise<DevPortChoice> {
  const requested = (c: DevPortChoice): DevPortChoice => ({
    ports: { ...c.ports, ...(opts.port ? { frontend: opts.port } : {}), ...(opts.metricsPort ? { metrics: opts.metricsPort } : {}) },
    uiPort: opts.uiPort ?? c.uiPort,
  });
  let saved: DevPortChoice | null = null;
  try {
    saved = reuse ? (JSON.parse(fs.readFileSync(portsFile, 'utf8')) as DevPortChoice) : null;
  } catch {
    saved = null;
  }
  if (saved?.ports && saved.uiPort) {
    const choice = requested(saved);
    const own = [...Object.values(choice.ports), ...(opts.headless ? [] : [choice.uiPort])];
    if (new Set(own).size === own.length && (await portsFree(own))) return choice;
  }
  const free = await freePorts(DEV_FREE_PORT_NAMES.length + 2);
  const ports = { frontend: free.pop()! } as DevPorts;
  for (const name of DEV_FREE_PORT_NAMES) ports[name] = free.pop()!;
  return requested({ ports, uiPort: free.pop()! });
}

/** A server process ended before it answered: worth starting again (startAgainIfExited). */
export class ExitedBeforeServingError extends Error {}

/** Rejects once `child` has exited (`what` names it); for racing against a wait (a later exit is nobody's error). */
function exitOf(child: ChildProcess, what: string): Promise<never> {
  const p = new Promise<never>((_, reject) => {
    const fail = () => reject(new ExitedBeforeServingError(`${what} exited with code ${child.exitCode ?? child.signalCode} before serving`));
    if (child.exitCode !== null || child.signalCode !== null) fail();
    else child.once('exit', fail);
  });
  p.catch(() => undefined);
  return p;
}

async function waitUntilServing(address: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new ExitedBeforeServingError(`temporal server exited with code ${child.exitCode} before serving`);
    try {
      const conn = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await conn.workflowService.getSystemInfo({});
        return;
      } finally {
        await conn.close();
      }
    } catch (e) {
      lastError = e;
      await sleep(250);
    }
  }
  throw new Error(`temporal server at ${address} did not answer within ${timeoutMs} ms: ${String(lastError)}`);
}

/** Until the UI server answers through to the server (it exits at once on a bad config or a taken port). */
async function waitForUi(uiUrl: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new ExitedBeforeServingError(`the Temporal UI server exited with code ${child.exitCode} before serving`);
    if (await fetch(`${uiUrl}/api/v1/namespaces`).then((r) => r.ok, () => false)) return;
    await sleep(250);
  }
  throw new Error(`the Temporal UI server did not answer ${uiUrl} within ${timeoutMs} ms`);
}

// The dev server talks plaintext whatever TEMPORAL_TLS_* this process has (for a cluster).
const PLAINTEXT_ENV: Record<string, string> = Object.fromEntries(
  ['TEMPORAL_TLS_SERVER_CA_CERT_PATH', 'TEMPORAL_TLS_CLIENT_CERT_PATH', 'TEMPORAL_TLS_CLIENT_KEY_PATH', 'TEMPORAL_TLS_SERVER_NAME', 'TEMPORAL_TLS', 'TEMPORAL_API_KEY'].map((k) => [k, '']),
);

/** The Temporal UI server: TEMPORAL_UI_SERVER_PATH, else the one scripts/ensure-cluster.mjs builds (once, cached). */
export async function uiServerBinary(): Promise<string> {
  const fromEnv = process.env.TEMPORAL_UI_SERVER_PATH;
  if (fromEnv) {
    if (!fs.existsSync(fromEnv)) throw new Error(`TEMPORAL_UI_SERVER_PATH=${fromEnv} does not exist`);
    return fromEnv;
  }
  const mod = (await import(path.join(PROJECT_ROOT, 'scripts', 'ensure-cluster.mjs'))) as { ensureProgram(name: string): Record<string, string> };
  return mod.ensureProgram('temporal-ui-server').server!;
}

/** `server --version` of a Temporal server binary, e.g. "1.32.1". */
function serverVersion(binary: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(binary, ['--version'], { timeout: 60_000 }, (err, stdout) => {
      if (err) return reject(new Error(`${binary} --version failed: ${err.message.split('\n')[0]}`));
      resolve(stdout.trim().replace(/^.*version\s+/i, ''));
    });
  });
}

/**
 * The server creates a fresh SQLite file's schema itself (setup=true) but never upgrades
 * an existing one: a database another server version wrote (the Temporal CLI's
 * start-dev, which ran the dev server before, embedded server 1.29.1) would lack the
 * newer tables and fail later, mid-run. So the version that created the file is
 * recorded beside it, and any other is refused at once, saying what to do.
 */
function checkDatabaseVersion(dbFile: string, marker: string, version: string): void {
  if (!fs.existsSync(dbFile)) {
    // Recorded before the server creates it: a start cut short is still ours next time.
    fs.writeFileSync(marker, `${version}\n`);
    return;
  }
  const recorded = fs.existsSync(marker) ? fs.readFileSync(marker, 'utf8').trim() : null;
  if (recorded === version) return;
  throw new Error(
    `${dbFile} was written by ${recorded ? `Temporal server ${recorded}` : 'another Temporal server (the Temporal CLI\'s start-dev, say)'}, ` +
      `and server ${version} does not upgrade a SQLite database in place: move it away (its workflows are lost) or use another data directory`,
  );
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
 * Ports are found free a moment before a server binds them (the dev server binds ten:
 * each service's gRPC and membership ports, HTTP, metrics, and the UI's); with several
 * servers starting at once one can be taken
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
export function spawnOwned(binary: string, args: string[], logFile: string | undefined, cwd?: string): { child: ChildProcess; watchdog: ChildProcess; killNow: () => void } {
  const out = logFile ? fs.openSync(logFile, 'a') : 'ignore';
  // Its own process group: a terminal's Ctrl-C reaches us, and we stop the server only
  // after the workers have drained (they still talk to it while shutting down).
  const child = spawn(binary, args, { stdio: ['ignore', out, out], detached: true, ...(cwd ? { cwd } : {}) });
  if (typeof out === 'number') fs.closeSync(out); // the child has its own copy
  const watchdog = watchParent(child.pid!);
  const killNow = () => {
    child.kill('SIGKILL');
    watchdog.kill('SIGKILL');
  };
  process.on('exit', killNow);
  return { child, watchdog, killNow };
}

export function startDevServer(opts: DevServerOptions): Promise<DevServer> {
  // A start again after a taken port takes fresh ports.
  let attempt = 0;
  return startAgainIfExited(() => startOnce(opts, attempt++ === 0));
}

/** `temporal.log` -> `temporal.ui.log`: the UI server's output beside the server's. */
const uiLogOf = (logFile: string): string => {
  const ext = path.extname(logFile);
  return `${logFile.slice(0, logFile.length - ext.length)}.ui${ext || '.log'}`;
};

async function startOnce(opts: DevServerOptions, reusePorts: boolean): Promise<DevServer> {
  const dbFile = path.resolve(opts.dbFile);
  const dir = `${dbFile}.server`;
  fs.mkdirSync(dir, { recursive: true });
  const marker = path.join(dir, 'server-version');
  const portsFile = path.join(dir, 'ports.json');
  const [version, { ports, uiPort }, uiBinary] = await Promise.all([
    serverVersion(opts.binary),
    choosePorts(opts, portsFile, reusePorts),
    opts.headless ? null : (opts.uiBinary ?? uiServerBinary()),
  ]);
  checkDatabaseVersion(dbFile, marker, version);
  fs.writeFileSync(portsFile, `${JSON.stringify({ ports, uiPort })}\n`);

  const dynamicConfigFile = path.join(dir, 'dynamicconfig.yaml');
  fs.writeFileSync(dynamicConfigFile, renderDynamicConfig(opts.startDevDefaults ? LEGACY_DEV_DYNAMIC_CONFIG : DEV_DYNAMIC_CONFIG));
  const configFile = path.join(dir, 'config.yaml');
  fs.writeFileSync(
    configFile,
    renderDevConfig({
      dbFile,
      ports,
      dynamicConfigFile,
      // SQLite admits one writer at a time, and with the default synchronous=FULL every
      // transaction waits for an fsync of the WAL (2.5-3.6 ms on this machine's disk):
      // that made the dev server the limit of many-tables (bench/README.md). NORMAL syncs
      // the WAL at checkpoints only: a killed server process loses nothing (the WAL is in
      // the OS), an OS crash or power loss may lose the last transactions.
      synchronous: opts.startDevDefaults ? 'full' : 'normal',
    }),
  );
  const address = `127.0.0.1:${ports.frontend}`;
  const uiUrl = `http://127.0.0.1:${uiPort}`;
  const server = spawnOwned(opts.binary, ['--config-file', configFile, '--allow-no-auth', 'start'], opts.logFile, dir);
  // The UI server starts meanwhile: it connects to the frontend only when asked.
  let ui: ReturnType<typeof spawnOwned> | undefined;
  if (uiBinary) {
    const uiDir = path.join(dir, 'ui');
    fs.mkdirSync(path.join(uiDir, 'config'), { recursive: true });
    fs.writeFileSync(path.join(uiDir, 'config', 'dev.yaml'), renderUiConfig({ grpcAddress: address, port: uiPort }));
    ui = spawnOwned(uiBinary, ['--root', uiDir, '--config', 'config', '--env', 'dev', 'start'], opts.logFile && uiLogOf(opts.logFile), uiDir);
  }
  const killAll = () => {
    ui?.killNow();
    server.killNow();
    process.off('exit', server.killNow);
    if (ui) process.off('exit', ui.killNow);
  };
  try {
    // Generous: the first start on a fresh machine maps a 200 MB binary from a cold page
    // cache while the rest of the first run still builds (measured: 96 s under such load).
    await waitUntilServing(address, server.child, 180_000);
    // What start-dev did by itself: namespace `default` and the search attributes
    // (idempotent, so a restart on the same file finds them there).
    await Promise.race([registerNamespace(address, 'default', PLAINTEXT_ENV, [address]), exitOf(server.child, 'temporal server')]);
    if (ui) await waitForUi(uiUrl, ui.child, 60_000);
  } catch (e) {
    killAll();
    throw e;
  }
  const stopOne = async (p: ReturnType<typeof spawnOwned>) => {
    process.off('exit', p.killNow);
    p.watchdog.kill('SIGKILL');
    if (p.child.exitCode !== null || p.child.signalCode !== null) return;
    const exited = new Promise<void>((r) => p.child.once('exit', () => r()));
    p.child.kill('SIGTERM');
    const timer = setTimeout(p.killNow, 10_000);
    await exited;
    clearTimeout(timer);
  };
  return {
    address,
    uiUrl: ui ? uiUrl : null,
    metricsUrl: `http://127.0.0.1:${ports.metrics}/metrics`,
    pid: server.child.pid!,
    uiPid: ui?.child.pid ?? null,
    async stop() {
      // The UI first: it only talks to the server.
      if (ui) await stopOne(ui);
      await stopOne(server);
    },
  };
}
