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
  /** Serves Go's pprof (/debug/pprof/) on this port of 127.0.0.1: benchmarks profile the server with it. */
  pprofPort?: number;
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
${c.pprofPort ? `  pprof:\n    port: ${c.pprofPort}\n` : ''}  membership:
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
export const LEGACY_DEV_DYNAMIC_CONFIG: Record<string, unknown> = {
  'system.enableActivityEagerExecution': true,
  'history.maxInFlightUpdates': 100,
  'system.forceSearchAttributesCacheRefreshOnRead': true,
};
