import fs from 'node:fs';
import net from 'node:net';
import { DEV_FREE_PORT_NAMES, type DevPorts } from './dev-config';

// Free ports on this host: one for anything that needs one, and the set a dev server
// binds (each service's gRPC and membership ports, HTTP, metrics, the UI's), kept per
// database from one start to the next.

/** The ports a caller asked for (DevServerOptions); the rest are chosen. */
export interface RequestedPorts {
  port?: number;
  uiPort?: number;
  metricsPort?: number;
  headless?: boolean;
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

export interface DevPortChoice {
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
export async function choosePorts(opts: RequestedPorts, portsFile: string, reuse: boolean): Promise<DevPortChoice> {
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
