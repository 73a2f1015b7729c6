import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { DEV_DYNAMIC_CONFIG } from '../server/dev-config';
import { freePort } from '../server/ports';
import { PROJECT_ROOT } from '../util/project-paths';
import { NODE_PORT_NAMES, renderDynamicConfig, renderNodeConfig, type NodePorts } from './node-config';
import { checkPostgresInstalled, initPostgres, postgresSpec, waitForPostgres } from './postgres';
import { postgresReachProblem } from './postgres-reach';
import { UsageError } from '../messages/errors';
import { alive, spawnDetached, stopPid, type SpawnSpec } from './processes';
import { setupSchemas } from './schema';
import { readState, writeState, type ClusterState, type ClusterTlsFiles, type ProcEntry, type Role } from './state';
import { renderUiConfig } from './ui-config';
import { registerNamespace, waitForFrontend } from './namespace';
import { withWorkerMalloc } from '../worker/allocator-env';
import { sleep } from '../util/sleep';

// `turnstile cluster up|status|down`: a Temporal cluster on this host without Docker or
// any system service: PostgreSQL, N server nodes on it, the UI server, a balancer in
// front of the frontends, and N Turnstile workers; all under one directory.

export interface Binaries {
  server: string;
  sql: string;
  ui: string;
  schemaDir: string;
}

export interface UpOptions {
  dir: string;
  nodes: number;
  workers: number;
  namespace?: string;
  dataRoot?: string;
  tls?: ClusterTlsFiles;
  binaries: Binaries;
}

/** History shards of the cluster: fixed for the database's life, so never changed once created. */
const HISTORY_SHARDS = 4;

// Namespace and search-attribute changes reach every node's cache within a second
// instead of ten, so `cluster up` can finish as soon as every frontend serves.
const CLUSTER_DYNAMIC_CONFIG = { ...DEV_DYNAMIC_CONFIG, 'system.namespaceCacheRefreshInterval': '1s' };

const TURNSTILE = path.join(PROJECT_ROOT, 'scripts', 'turnstile.mjs');

// The membership table keeps ports as smallint: a node's ports must stay below 32768,
// under Linux's ephemeral range (where port 0 binds land), so they come from 20000-32767.
const LOW_PORTS = { from: 20_000, to: 32_767 };

async function lowFreePort(taken: Set<number>): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = LOW_PORTS.from + Math.floor(Math.random() * (LOW_PORTS.to - LOW_PORTS.from));
    if (!taken.has(port) && (await portFree(port))) {
      taken.add(port);
      return port;
    }
  }
  throw new Error(`no free port in ${LOW_PORTS.from}-${LOW_PORTS.to}`);
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

async function allocatePorts(taken: Set<number>): Promise<NodePorts> {
  const ports: Partial<NodePorts> = {};
  for (const name of NODE_PORT_NAMES) ports[name] = await lowFreePort(taken);
  return ports as NodePorts;
}

/** TEMPORAL_TLS_* for a client of this cluster (workers, the tests' writers). */
export function clientTlsEnv(tls: ClusterTlsFiles | undefined): Record<string, string> {
  if (!tls) return {};
  return {
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: tls.caFile,
    TEMPORAL_TLS_CLIENT_CERT_PATH: tls.clientCertFile,
    TEMPORAL_TLS_CLIENT_KEY_PATH: tls.clientKeyFile,
    TEMPORAL_TLS_SERVER_NAME: tls.serverName,
  };
}

function start(state: ClusterState, role: Role, name: string, address: string, spec: SpawnSpec): ProcEntry {
  const env = spec.env ? { ...process.env, ...spec.env } : process.env;
  const { pid } = spawnDetached({ ...spec, env });
  const entry: ProcEntry = { role, name, pid, address, spec };
  state.processes = state.processes.filter((p) => p.name !== name).concat(entry);
  return entry;
}

export function nodeSpec(state: ClusterState, i: number, binaries: Binaries): SpawnSpec {
  const nodeDir = path.join(state.dir, `node${i}`);
  fs.mkdirSync(path.join(nodeDir, 'config'), { recursive: true });
  const tls = state.tls && { caFile: state.tls.caFile, certFile: state.tls.serverCertFile, keyFile: state.tls.serverKeyFile, serverName: state.tls.serverName };
  const config = renderNodeConfig({ ports: state.nodes[i]!, pgPort: state.pgPort, dynamicConfigFile: path.join(state.dir, 'dynamicconfig.yaml'), historyShards: HISTORY_SHARDS, ...(tls ? { tls } : {}) });
  fs.writeFileSync(path.join(nodeDir, 'config', 'cluster.yaml'), config);
  return { cmd: binaries.server, args: ['--root', nodeDir, '--config', 'config', '--env', 'cluster', '--allow-no-auth', 'start'], cwd: nodeDir, log: path.join(nodeDir, 'server.log') };
}

export async function clusterUp(o: UpOptions): Promise<ClusterState> {
  const dir = path.resolve(o.dir);
  const previous = readState(dir);
  if (previous?.processes.some((p) => alive(p.pid))) throw new Error(`a cluster is already running under ${dir}; stop it with "turnstile cluster down --dir ${o.dir}"`);
  checkPostgresInstalled();
  const unreachable = postgresReachProblem(dir);
  if (unreachable !== null) throw new UsageError(unreachable);
  fs.mkdirSync(dir, { recursive: true });
  const logs = path.join(dir, 'logs');
  fs.mkdirSync(logs, { recursive: true });
  const balancerPort = await freePort();
  const state: ClusterState = {
    dir,
    dataRoot: path.resolve(o.dataRoot ?? path.join(dir, 'data')),
    namespace: o.namespace ?? 'default',
    address: `127.0.0.1:${balancerPort}`,
    uiUrl: '',
    pgPort: await freePort(),
    nodes: [],
    ...(o.tls ? { tls: o.tls } : {}),
    processes: [],
  };
  const taken = new Set<number>();
  for (let i = 0; i < o.nodes; i++) state.nodes.push(await allocatePorts(taken));
  const save = () => writeState(state);
  try {
    const pgDir = path.join(dir, 'pg');
    initPostgres(pgDir, path.join(logs, 'initdb.log'));
    start(state, 'postgres', 'postgres', `127.0.0.1:${state.pgPort}`, postgresSpec(pgDir, state.pgPort, path.join(logs, 'postgres.log')));
    await save();
    await waitForPostgres(state.pgPort);
    setupSchemas({ sqlTool: o.binaries.sql, schemaDir: o.binaries.schemaDir, pgPort: state.pgPort, dir, log: path.join(logs, 'schema.log') });

    fs.writeFileSync(path.join(dir, 'dynamicconfig.yaml'), renderDynamicConfig(CLUSTER_DYNAMIC_CONFIG));
    const frontends = state.nodes.map((n) => `127.0.0.1:${n.frontend}`);
    const tlsEnv = clientTlsEnv(o.tls);
    // The first node alone: on a fresh database each node would write the initial
    // cluster metadata, and all but one fail at start. The others join it afterwards.
    for (let i = 0; i < o.nodes; i++) {
      start(state, 'temporal', `temporal${i}`, frontends[i]!, nodeSpec(state, i, o.binaries));
      await save();
      if (i === 0) await waitForFrontend(frontends[0]!, tlsEnv, 300_000); // minutes on a loaded 2-core host
    }
    start(state, 'balancer', 'balancer', state.address, {
      cmd: process.execPath,
      args: [TURNSTILE, 'cluster', 'balancer', '--port', String(balancerPort), '--to', frontends.join(',')],
      log: path.join(logs, 'balancer.log'),
    });
    await save();
    for (const f of frontends.slice(1)) await waitForFrontend(f, tlsEnv, 300_000);
    await registerNamespace(state.address, state.namespace, tlsEnv, frontends);

    const uiPort = await freePort();
    const uiDir = path.join(dir, 'ui');
    fs.mkdirSync(path.join(uiDir, 'config'), { recursive: true });
    fs.writeFileSync(path.join(uiDir, 'config', 'cluster.yaml'), renderUiConfig({ grpcAddress: state.address, port: uiPort, ...(o.tls ? { tls: o.tls } : {}) }));
    state.uiUrl = `http://127.0.0.1:${uiPort}`;
    const ui = start(state, 'ui', 'ui', state.uiUrl, { cmd: o.binaries.ui, args: ['--root', uiDir, '--config', 'config', '--env', 'cluster', 'start'], cwd: uiDir, log: path.join(logs, 'ui.log') });
    await save();
    await waitForHttp(`${state.uiUrl}/api/v1/namespaces`, ui.pid, path.join(logs, 'ui.log'));

    for (let i = 0; i < o.workers; i++) {
      start(state, 'worker', `worker${i}`, state.address, workerSpec(state, i, tlsEnv));
      await save();
    }
    return state;
  } catch (e) {
    // Nothing half-started is left running; the folder (logs) stays for a look.
    await save();
    await clusterDown(dir).catch(() => undefined);
    throw e;
  }
}

/** Until the UI server answers through to the cluster (it exits at once on a bad config). */
async function waitForHttp(url: string, pid: number, log: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!alive(pid)) throw new Error(`the Temporal UI server exited at start; see ${log}`);
    const ok = await fetch(url).then((r) => r.ok, () => false);
    if (ok) return;
    await sleep(250);
  }
  throw new Error(`the Temporal UI server did not answer ${url} within ${timeoutMs} ms; see ${log}`);
}

function workerSpec(state: ClusterState, name: number | string, tlsEnv: Record<string, string>, extraEnv: Record<string, string> = {}): SpawnSpec {
  const label = typeof name === 'number' ? `worker${name}` : name;
  return {
    cmd: process.execPath,
    args: [TURNSTILE, 'worker'],
    log: path.join(state.dir, 'logs', `${label}.log`),
    // The worker malloc tunables, as README "Running workers" asks (src/worker/allocator-env.ts).
    env: { TEMPORAL_ADDRESS: state.address, TEMPORAL_NAMESPACE: state.namespace, TURNSTILE_DATA: state.dataRoot, ...tlsEnv, GLIBC_TUNABLES: withWorkerMalloc(process.env).GLIBC_TUNABLES!, ...extraEnv },
  };
}

/**
 * One more worker process of the cluster, stopped by `down` like the others: a blue-green
 * upgrade starts the next release's workers beside the running ones (`extraEnv`:
 * TURNSTILE_WORKFLOW_BUNDLE for a bundle other than this checkout's).
 */
export async function addWorker(dir: string, name: string, extraEnv: Record<string, string> = {}): Promise<ProcEntry> {
  const state = readState(path.resolve(dir));
  if (!state) throw new Error(`no cluster in ${dir}`);
  if (state.processes.some((p) => p.name === name)) throw new Error(`the cluster already has a process ${name}`);
  const entry = start(state, 'worker', name, state.address, workerSpec(state, name, clientTlsEnv(state.tls), extraEnv));
  await writeState(state);
  return entry;
}

export interface ProcStatus {
  role: Role;
  name: string;
  pid: number;
  address: string;
  alive: boolean;
}

export function clusterStatus(dir: string): { state: ClusterState; processes: ProcStatus[] } | null {
  const state = readState(path.resolve(dir));
  if (!state) return null;
  return { state, processes: state.processes.map((p) => ({ role: p.role, name: p.name, pid: p.pid, address: p.address, alive: alive(p.pid) })) };
}

// Workers first (they drain their tasks while the server still answers), then the UI and
// the balancer, the server nodes, and PostgreSQL last with its fast shutdown (SIGINT).
const STOP_ORDER: Role[] = ['worker', 'ui', 'balancer', 'temporal', 'postgres'];

export async function clusterDown(dir: string): Promise<ProcStatus[]> {
  const state = readState(path.resolve(dir));
  if (!state) return [];
  const stopped: ProcStatus[] = [];
  for (const role of STOP_ORDER) {
    const group = state.processes.filter((p) => p.role === role);
    await Promise.all(group.map((p) => stopPid(p.pid, role === 'postgres' ? 'SIGINT' : 'SIGTERM', role === 'worker' ? 40_000 : 20_000)));
    for (const p of group) stopped.push({ role: p.role, name: p.name, pid: p.pid, address: p.address, alive: false });
  }
  state.processes = [];
  await writeState(state);
  return stopped;
}

/** SIGKILLs (or otherwise signals) one process of the cluster and waits until it is gone: the fault tests' tool. */
export async function stopProcess(dir: string, name: string, signal: NodeJS.Signals): Promise<void> {
  const state = readState(path.resolve(dir));
  const p = state?.processes.find((x) => x.name === name);
  if (!p) throw new Error(`no process ${name} in ${dir}`);
  await stopPid(p.pid, signal, 60_000);
}

/** Starts a process of the cluster again exactly as `up` did (same ports, same config). */
export async function restartProcess(dir: string, name: string): Promise<ProcEntry> {
  const state = readState(path.resolve(dir));
  const p = state?.processes.find((x) => x.name === name);
  if (!state || !p) throw new Error(`no process ${name} in ${dir}`);
  if (alive(p.pid)) throw new Error(`${name} (pid ${p.pid}) is still running`);
  const entry = start(state, p.role, p.name, p.address, p.spec);
  await writeState(state);
  if (p.role === 'postgres') await waitForPostgres(state.pgPort);
  return entry;
}
