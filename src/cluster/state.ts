import fs from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../storage/atomic-file';
import type { NodePorts } from './node-config';
import type { SpawnSpec } from './processes';

// cluster.json under the cluster's directory: what `cluster up` started (role, pid,
// address, and how to start it again), read by `status` and `down` and by the fault
// tests that kill and restart one process.

export type Role = 'postgres' | 'temporal' | 'balancer' | 'ui' | 'worker';

export interface ProcEntry {
  role: Role;
  name: string;
  pid: number;
  address: string;
  /** How to start it again (env holds only what differs from the caller's environment). */
  spec: SpawnSpec;
}

export interface ClusterTlsFiles {
  caFile: string;
  serverCertFile: string;
  serverKeyFile: string;
  clientCertFile: string;
  clientKeyFile: string;
  serverName: string;
}

export interface ClusterState {
  dir: string;
  dataRoot: string;
  namespace: string;
  /** The clients' address: the balancer in front of every node's frontend. */
  address: string;
  uiUrl: string;
  pgPort: number;
  nodes: NodePorts[];
  tls?: ClusterTlsFiles;
  processes: ProcEntry[];
}

export const stateFile = (dir: string): string => path.join(dir, 'cluster.json');

export function readState(dir: string): ClusterState | null {
  try {
    return JSON.parse(fs.readFileSync(stateFile(dir), 'utf8')) as ClusterState;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

export async function writeState(s: ClusterState): Promise<void> {
  await writeFileAtomic(stateFile(s.dir), JSON.stringify(s, null, 2) + '\n');
}
