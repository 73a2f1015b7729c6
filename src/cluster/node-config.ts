// The configuration of one Temporal server node of the local cluster, rendered from our
// own template (not the module's development-postgres12.yaml edited in place): every node
// shares the PostgreSQL database (membership goes through its cluster_membership table)
// and has its own ports, so N nodes on one host form one cluster.

export interface NodePorts {
  frontend: number;
  frontendMembership: number;
  frontendHttp: number;
  history: number;
  historyMembership: number;
  matching: number;
  matchingMembership: number;
  worker: number;
  workerMembership: number;
  metrics: number;
}

export const NODE_PORT_NAMES: (keyof NodePorts)[] = [
  'frontend', 'frontendMembership', 'frontendHttp', 'history', 'historyMembership',
  'matching', 'matchingMembership', 'worker', 'workerMembership', 'metrics',
];

/** Frontend mTLS: server certificate and key, and the CA client certificates must chain to. */
export interface NodeTls {
  caFile: string;
  certFile: string;
  keyFile: string;
  /** The name in the server certificate, which internal clients check. */
  serverName: string;
}

export interface NodeConfigInput {
  ports: NodePorts;
  pgPort: number;
  dynamicConfigFile: string;
  /** Same for every node and every start: the number of history shards is fixed for the database's life. */
  historyShards: number;
  tls?: NodeTls;
}

const datastore = (db: string, pgPort: number, maxConns: number) => `
      sql:
        pluginName: "postgres12"
        databaseName: "${db}"
        connectAddr: "127.0.0.1:${pgPort}"
        connectProtocol: "tcp"
        user: "temporal"
        password: ""
        maxConns: ${maxConns}
        maxIdleConns: ${maxConns}
        maxConnLifetime: "1h"`;

const service = (grpc: number, membership: number, http?: number) => `
    rpc:
      grpcPort: ${grpc}
      membershipPort: ${membership}
      bindOnLocalHost: true${http ? `\n      httpPort: ${http}` : ''}`;

// Internode traffic uses the server certificate both ways; internal clients of the
// frontend (the system worker) present it too, which is why it must allow clientAuth.
const tlsBlock = (t: NodeTls) => `
  tls:
    internode:
      server:
        certFile: "${t.certFile}"
        keyFile: "${t.keyFile}"
        requireClientAuth: true
        clientCaFiles: ["${t.caFile}"]
      client:
        serverName: "${t.serverName}"
        rootCaFiles: ["${t.caFile}"]
    frontend:
      server:
        certFile: "${t.certFile}"
        keyFile: "${t.keyFile}"
        requireClientAuth: true
        clientCaFiles: ["${t.caFile}"]
      client:
        serverName: "${t.serverName}"
        rootCaFiles: ["${t.caFile}"]`;

/**
 * The four services on their ports and the one-cluster metadata: the same for a cluster
 * node and the dev server (src/server/dev-config.ts), which also names its HTTP address.
 */
export function servicesAndClusterBlock(p: NodePorts, opts: { httpAddress?: boolean } = {}): string {
  return `services:
  frontend:${service(p.frontend, p.frontendMembership, p.frontendHttp)}
  matching:${service(p.matching, p.matchingMembership)}
  history:${service(p.history, p.historyMembership)}
  worker:${service(p.worker, p.workerMembership)}

clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: "active"
  currentClusterName: "active"
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: "frontend"
      rpcAddress: "127.0.0.1:${p.frontend}"${opts.httpAddress ? `\n      httpAddress: "127.0.0.1:${p.frontendHttp}"` : ''}

dcRedirectionPolicy:
  policy: "noop"
`;
}

export function renderNodeConfig(c: NodeConfigInput): string {
  const p = c.ports;
  return `# Rendered by turnstile cluster (src/cluster/node-config.ts); rewritten on every start.
log:
  stdout: true
  level: warn

persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: ${c.historyShards}
  datastores:
    postgres-default:${datastore('temporal', c.pgPort, 20)}
    postgres-visibility:${datastore('temporal_visibility', c.pgPort, 4)}

global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "127.0.0.1"
  metrics:
    prometheus:
      framework: "tally"
      timerType: "histogram"
      listenAddress: "127.0.0.1:${p.metrics}"${c.tls ? tlsBlock(c.tls) : ''}

${servicesAndClusterBlock(p)}
dynamicConfigClient:
  filepath: "${c.dynamicConfigFile}"
  pollInterval: "10s"
`;
}

/** Dynamic config of every node: Turnstile's server settings (as on the dev server) and quick namespace propagation. */
export function renderDynamicConfig(values: Record<string, unknown>): string {
  return Object.entries(values)
    .map(([k, v]) => `${k}:\n  - value: ${JSON.stringify(v)}\n    constraints: {}\n`)
    .join('');
}
