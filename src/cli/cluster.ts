import fs from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../util/project-paths';
import type { Binaries } from '../cluster/cluster';
import type { ClusterTlsFiles } from '../cluster/state';
import { int, str, type Parsed } from './args';
import { UsageError } from '../messages/errors';

// `turnstile cluster up|status|down`: the local multi-node Temporal cluster on its own
// PostgreSQL (src/cluster/). `up` returns once everything serves, leaving the processes
// running; `status` and `down` find them through DIR/cluster.json.

const DEFAULT_DIR = path.join('.turnstile', 'cluster');
const dirOf = (p: Parsed): string => path.resolve(str(p, 'dir') ?? DEFAULT_DIR);

interface EnsureCluster {
  ensureProgram(name: string): Record<string, string>;
  serverSchemaDir(): string;
}

async function binaries(): Promise<Binaries> {
  const mod = (await import(path.join(PROJECT_ROOT, 'scripts', 'ensure-cluster.mjs'))) as EnsureCluster;
  const server = mod.ensureProgram('temporal-server');
  const ui = mod.ensureProgram('temporal-ui-server');
  return { server: server.server!, sql: server.sql!, ui: ui.server!, schemaDir: mod.serverSchemaDir() };
}

/** --tls DIR: ca.pem, server.pem, server.key (the nodes' frontend and internode mTLS), client.pem, client.key (workers, UI). */
function tlsFiles(p: Parsed): ClusterTlsFiles | undefined {
  const dir = str(p, 'tls');
  if (dir === undefined) return undefined;
  const f = (name: string) => {
    const file = path.resolve(dir, name);
    if (!fs.existsSync(file)) throw new UsageError(`--tls: ${file} is missing; accepted: a folder with ca.pem, server.pem, server.key, client.pem, client.key`);
    return file;
  };
  return {
    caFile: f('ca.pem'),
    serverCertFile: f('server.pem'),
    serverKeyFile: f('server.key'),
    clientCertFile: f('client.pem'),
    clientKeyFile: f('client.key'),
    serverName: str(p, 'tls-server-name') ?? 'localhost',
  };
}

export async function up(p: Parsed): Promise<void> {
  const nodes = int(p, 'nodes', 1, 5, 2);
  const workers = int(p, 'workers', 0, 16, 2);
  const dir = dirOf(p);
  const tls = tlsFiles(p);
  // Before the binaries are fetched (minutes, the first time) and anything starts.
  const { postgresReachProblem } = await import('../cluster/postgres-reach');
  const unreachable = postgresReachProblem(dir);
  if (unreachable !== null) throw new UsageError(unreachable);
  const { clusterUp } = await import('../cluster/cluster');
  const started = Date.now();
  const state = await clusterUp({ dir, nodes, workers, binaries: await binaries(), ...(tls ? { tls } : {}), ...(process.env.TURNSTILE_DATA ? { dataRoot: process.env.TURNSTILE_DATA } : {}) });
  console.log(`Temporal gRPC: ${state.address}  namespace: ${state.namespace}  (balancer over ${nodes} node${nodes > 1 ? 's' : ''}${tls ? ', mTLS' : ''})`);
  state.nodes.forEach((n, i) => console.log(`  node${i}:      frontend 127.0.0.1:${n.frontend}  metrics http://127.0.0.1:${n.metrics}/metrics`));
  console.log(`Temporal UI:   ${state.uiUrl}`);
  console.log(`PostgreSQL:    127.0.0.1:${state.pgPort} (user temporal)`);
  console.log(`Data:          ${state.dataRoot}`);
  console.log(`Workers:       ${workers} (logs in ${path.join(dir, 'logs')})`);
  console.log(`Up in ${((Date.now() - started) / 1000).toFixed(1)} s. Use it with: TEMPORAL_ADDRESS=${state.address} TURNSTILE_DATA=${state.dataRoot}`);
  console.log(`Stop with:     turnstile cluster down${str(p, 'dir') ? ` --dir ${str(p, 'dir')}` : ''}`);
}

export async function status(p: Parsed): Promise<void> {
  const { clusterStatus } = await import('../cluster/cluster');
  const s = clusterStatus(dirOf(p));
  if (!s) throw new UsageError(`--dir: no cluster under ${dirOf(p)} (start one with "turnstile cluster up")`);
  if (p.flags.json) {
    console.log(JSON.stringify({ address: s.state.address, namespace: s.state.namespace, uiUrl: s.state.uiUrl, dataRoot: s.state.dataRoot, processes: s.processes }, null, 2));
    return;
  }
  console.log(`cluster ${s.state.dir}: ${s.state.address} namespace ${s.state.namespace}, UI ${s.state.uiUrl}`);
  if (s.processes.length === 0) console.log('no processes (stopped)');
  for (const x of s.processes) console.log(`${x.role.padEnd(9)} ${x.name.padEnd(10)} pid ${String(x.pid).padEnd(8)} ${x.address.padEnd(24)} ${x.alive ? 'running' : 'DEAD'}`);
}

export async function down(p: Parsed): Promise<void> {
  const { clusterDown } = await import('../cluster/cluster');
  const stopped = await clusterDown(dirOf(p));
  console.log(stopped.length ? `stopped ${stopped.map((x) => x.name).join(', ')}` : 'nothing running');
}

/** The frontend balancer, run by `up` as its own process. */
export async function balancer(p: Parsed): Promise<void> {
  const port = int(p, 'port', 1, 65535);
  const to = (str(p, 'to') ?? '').split(',').filter(Boolean);
  if (to.length === 0) throw new UsageError('--to: required (HOST:PORT,... of the frontends)');
  const { startBalancer } = await import('../cluster/balancer');
  await startBalancer(port, to);
  console.log(`balancing 127.0.0.1:${port} over ${to.join(', ')}`);
  await new Promise<never>(() => {});
}

/** `cluster add-workers`: N more worker processes running this checkout's build (blue-green: beside the running ones). */
export async function addWorkers(p: Parsed): Promise<void> {
  const n = int(p, 'workers', 1, 16, 2);
  const { addWorker, clusterStatus } = await import('../cluster/cluster');
  const s = clusterStatus(dirOf(p));
  if (!s) throw new UsageError(`--dir: no cluster under ${dirOf(p)} (start one with "turnstile cluster up")`);
  const taken = new Set(s.processes.map((x) => x.name));
  const added: string[] = [];
  for (let i = 0; added.length < n; i++) {
    const name = `worker${i}`;
    if (taken.has(name)) continue;
    await addWorker(dirOf(p), name);
    added.push(name);
  }
  console.log(`started ${added.join(', ')} (logs in ${path.join(dirOf(p), 'logs')}); each prints its version; \`turnstile upgrade status\` lists it once it polls`);
}

/** `cluster stop-workers --build ID`: stops the cluster's workers of one version (after it drained). */
export async function stopWorkers(p: Parsed): Promise<void> {
  const build = str(p, 'build');
  if (!build) throw new UsageError('--build: required (a build id that `turnstile upgrade status` lists)');
  const [{ clusterStatus, stopProcess }, { liveRecords }] = await Promise.all([import('../cluster/cluster'), import('../worker/registry')]);
  const s = clusterStatus(dirOf(p));
  if (!s) throw new UsageError(`--dir: no cluster under ${dirOf(p)} (start one with "turnstile cluster up")`);
  const pids = new Set((await liveRecords(s.state.dataRoot)).filter((r) => r.buildId === build).map((r) => r.pid));
  const mine = s.processes.filter((x) => x.role === 'worker' && x.alive && pids.has(x.pid));
  if (mine.length === 0) throw new UsageError(`--build: no running worker of the cluster has version ${build}`);
  for (const x of mine) await stopProcess(dirOf(p), x.name, 'SIGTERM');
  console.log(`stopped ${mine.map((x) => x.name).join(', ')} (version ${build})`);
}
