import path from 'node:path';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import type { Binaries } from '../../src/cluster/cluster';

// The cluster programs, built (first time only) and cached by scripts/ensure-cluster.mjs,
// as `turnstile cluster up` gets them.

interface EnsureCluster {
  ensureProgram(name: string): Record<string, string>;
  serverSchemaDir(): string;
  SERVER_VERSION: string;
  UI_VERSION: string;
}

export const ensureCluster = async (): Promise<EnsureCluster> => (await import(path.join(PROJECT_ROOT, 'scripts', 'ensure-cluster.mjs'))) as EnsureCluster;

export async function clusterBinaries(): Promise<Binaries> {
  const m = await ensureCluster();
  const server = m.ensureProgram('temporal-server');
  const ui = m.ensureProgram('temporal-ui-server');
  return { server: server.server!, sql: server.sql!, ui: ui.server!, schemaDir: m.serverSchemaDir() };
}
