// The configuration of the embedded dev server: the real Temporal server binary
// (go.temporal.io/server/cmd/server) with every service in one process on one SQLite
// file, rendered from our own template, like the local cluster's nodes
// (src/cluster/node-config.ts). The SQLite settings follow the module's
// config/development-sqlite-file.yaml: the plugin creates the file (mode=rwc) and its
// schema (setup=true) on first use.

import { servicesAndClusterBlock, type NodePorts } from '../cluster/node-config';

/** The same ports as a cluster node's. */
export type DevPorts = NodePorts;

/** Every port but the frontend's, which the caller asks for. */
export const DEV_FREE_PORT_NAMES: Exclude<keyof DevPorts, 'frontend'>[] = [
  'frontendMembership', 'frontendHttp', 'history', 'historyMembership',
  'matching', 'matchingMembership', 'worker', 'workerMembership', 'metrics',
];

export interface DevConfigInput {
  dbFile: string;
  ports: DevPorts;
  dynamicConfigFile: string;
  /** SQLite's `synchronous` pragma: `normal` (ours) or `full` (SQLite's default, what start-dev ran with). */
  synchronous: 'normal' | 'full';
  logLevel?: string;
}

const q = (s: string): string => JSON.stringify(s);

export function renderDevConfig(c: DevConfigInput): string {
  const p = c.ports;
  return `# Rendered by turnstile dev (src/server/dev-config.ts); rewritten on every start.
log:
  stdout: true
  level: ${c.logLevel ?? 'warn'}

persistence:
  defaultStore: sqlite-default
  visibilityStore: sqlite-default
  numHistoryShards: 1
  datastores:
    sqlite-default:
      sql:
        pluginName: "sqlite"
        databaseName: ${q(c.dbFile)}
        connectAddr: "localhost"
        connectProtocol: "tcp"
        connectAttributes:
          mode: "rwc"
          cache: "private"
          setup: "true"
          journal_mode: "wal"
          synchronous: "${c.synchronous}"
          busy_timeout: "10000"
        maxConns: 1
        maxIdleConns: 1
        maxConnLifetime: "1h"

global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "127.0.0.1"
  metrics:
    prometheus:
      framework: "tally"
      timerType: "histogram"
      listenAddress: "127.0.0.1:${p.metrics}"

${servicesAndClusterBlock(p, { httpAddress: true })}
archival:
  history:
    state: "disabled"
  visibility:
    state: "disabled"

namespaceDefaults:
  archival:
    history:
      state: "disabled"
    visibility:
      state: "disabled"

publicClient:
  hostPort: "127.0.0.1:${p.frontend}"

dynamicConfigClient:
  filepath: ${q(c.dynamicConfigFile)}
  pollInterval: "10s"
`;
}
