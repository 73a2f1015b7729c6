import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { clientTlsEnv, clusterDown, clusterUp } from '../../src/cluster/cluster';
import type { ClusterState } from '../../src/cluster/state';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import { findTool, POSTGRES, skipWithout } from '../support/tools';
import { clusterBinaries } from './cluster-bins';
import { makeCerts } from './certs';

// Connection security against a cluster node started with frontend mTLS: every
// Turnstile process takes its TLS settings from TEMPORAL_TLS_* (the Temporal CLI's
// names). The cluster's worker (a real `turnstile worker` process) merges over mTLS;
// the CLI's SDK connection (write, wait-merged) and its raw gRPC read client (status)
// connect with the client certificate; without one, or with one of another CA, a
// command fails with one line, exit 1.

const pg = findTool(POSTGRES);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-tls-'));
const certs = path.join(dir, 'certs');
let state: ClusterState;

beforeAll(async () => {
  if ('skip' in pg) return;
  fs.chmodSync(dir, 0o755);
  makeCerts(certs);
  state = await clusterUp({
    dir: path.join(dir, 'cluster'),
    nodes: 1,
    workers: 1,
    binaries: await clusterBinaries(),
    tls: {
      caFile: path.join(certs, 'ca.pem'),
      serverCertFile: path.join(certs, 'server.pem'),
      serverKeyFile: path.join(certs, 'server.key'),
      clientCertFile: path.join(certs, 'client.pem'),
      clientKeyFile: path.join(certs, 'client.key'),
      serverName: 'localhost',
    },
  });
}, 20 * 60_000);

afterAll(async () => {
  if (state) await clusterDown(state.dir);
  // TURNSTILE_KEEP_CLUSTER=1 keeps the folder (logs, configs) for a look after a failure.
  if (process.env.TURNSTILE_KEEP_CLUSTER !== '1') fs.rmSync(dir, { recursive: true, force: true });
}, 120_000);

function turnstile(args: string[], env: Record<string, string>) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TEMPORAL_')));
  const r = spawnSync(process.execPath, [path.join(PROJECT_ROOT, 'scripts', 'turnstile.mjs'), ...args], {
    env: { ...clean, TEMPORAL_ADDRESS: state.address, TURNSTILE_DATA: state.dataRoot, ...env },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('a cluster node with frontend mTLS', () => {
  skipWithout(pg);
  test('the CLI and the cluster worker work over mTLS: create, write, wait-merged, status', () => {
    const tls = clientTlsEnv(state.tls);
    const created = turnstile(['table', 'create', 'secure', '--key', 'id', '--shards', '1'], tls);
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    const written = turnstile(['write', 'secure', '--shard', 's0', '--rows', '100'], tls);
    expect(written.code).toBe(0);
    expect(written.stdout).toContain('sealed secure/s0 seq 1');
    const merged = turnstile(['wait-merged', 'secure', '--shard', 's0', '--seq', '1', '--timeout', '120'], tls);
    expect(merged.code).toBe(0);
    const status = turnstile(['status', 'secure', '--json'], tls);
    expect(status.code).toBe(0);
    expect((JSON.parse(status.stdout) as { shards: { mergedThroughSeq: number }[] }).shards[0]!.mergedThroughSeq).toBe(1);
  });

  test('a missing or wrong client certificate fails in one line, exit 1 (SDK and raw gRPC clients)', () => {
    const noCert = { TEMPORAL_TLS_SERVER_CA_CERT_PATH: path.join(certs, 'ca.pem'), TEMPORAL_TLS_SERVER_NAME: 'localhost' };
    const wrongCert = { ...noCert, TEMPORAL_TLS_CLIENT_CERT_PATH: path.join(certs, 'wrong-client.pem'), TEMPORAL_TLS_CLIENT_KEY_PATH: path.join(certs, 'wrong-client.key') };
    for (const env of [noCert, wrongCert]) {
      for (const args of [['table', 'list'], ['status', 'secure']]) {
        const r = turnstile(args, env);
        expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(1);
        const lines = r.stderr.trim().split('\n');
        expect(lines, r.stderr).toHaveLength(1);
        expect(lines[0]).toMatch(/^turnstile: .*TEMPORAL_TLS_CLIENT_CERT_PATH/);
      }
    }
  });

  test('a client certificate path that does not exist is bad input: one line naming the variable, exit 2', () => {
    const r = turnstile(['table', 'list'], { ...clientTlsEnv(state.tls), TEMPORAL_TLS_CLIENT_CERT_PATH: path.join(certs, 'nope.pem') });
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toMatch(/^turnstile: TEMPORAL_TLS_CLIENT_CERT_PATH: cannot read .*nope\.pem/);
  });
});
