import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { registerNamespace } from '../cluster/namespace';
import { renderDynamicConfig } from '../cluster/node-config';
import { renderUiConfig } from '../cluster/ui-config';
import { PROJECT_ROOT } from '../util/project-paths';
import { DEV_DYNAMIC_CONFIG, LEGACY_DEV_DYNAMIC_CONFIG, renderDevConfig } from './dev-config';
import { checkDatabaseVersion, serverVersion } from './dev-database';
import { ExitedBeforeServingError, exitOf, spawnOwned, startAgainIfExited, stopOwned, type OwnedProcess } from './owned-process';
import { choosePorts } from './ports';
import { sleep } from '../util/sleep';

// The embedded default: the real Temporal server (go.temporal.io/server/cmd/server, built
// by scripts/ensure-temporal.mjs) with every service in one process on one SQLite file
// in WAL mode (src/server/dev-config.ts), namespace `default` and the project's search
// attributes registered at start, and, unless headless, the Temporal UI server in front
// of it. Both children die with us: stop() on shutdown, and a synchronous kill on exit
// so no server is left orphaned when the parent crashes. This file puts it together
// from its settings (dev-config.ts), ports (ports.ts), database (dev-database.ts) and the
// supervision of both processes (owned-process.ts).

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
  /** Benchmarks only: serve Go's pprof on this port (`go tool pprof http://127.0.0.1:PORT/debug/pprof/profile`). */
  pprofPort?: number;
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
      ...(opts.pprofPort ? { pprofPort: opts.pprofPort } : {}),
    }),
  );
  const address = `127.0.0.1:${ports.frontend}`;
  const uiUrl = `http://127.0.0.1:${uiPort}`;
  const server = spawnOwned(opts.binary, ['--config-file', configFile, '--allow-no-auth', 'start'], opts.logFile, dir);
  // The UI server starts meanwhile: it connects to the frontend only when asked.
  let ui: OwnedProcess | undefined;
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
  return {
    address,
    uiUrl: ui ? uiUrl : null,
    metricsUrl: `http://127.0.0.1:${ports.metrics}/metrics`,
    pid: server.child.pid!,
    uiPid: ui?.child.pid ?? null,
    async stop() {
      // The UI first: it only talks to the server.
      if (ui) await stopOwned(ui);
      await stopOwned(server);
    },
  };
}
