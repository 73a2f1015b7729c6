import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { postgresUser, runToEnd, type SpawnSpec } from './processes';
import { sleep } from '../util/sleep';

// The cluster's own PostgreSQL: a data directory under the cluster's, a server on
// 127.0.0.1 only with its socket in that directory, trust authentication for the one
// role `temporal`. No system service is touched. initdb and postgres refuse to run as
// root, so as root they run as the `postgres` user, which owns the data directory.

export const PG_BIN = process.env.TURNSTILE_PG_BIN ?? '/usr/lib/postgresql/15/bin';

export function checkPostgresInstalled(): void {
  if (!fs.existsSync(path.join(PG_BIN, 'postgres'))) {
    throw new Error(`PostgreSQL not found in ${PG_BIN} (set TURNSTILE_PG_BIN, or apt-get install postgresql-15)`);
  }
}

/** Creates the data directory on first use; later starts reuse it (and its databases). */
export function initPostgres(pgDir: string, log: string): void {
  if (fs.existsSync(path.join(pgDir, 'PG_VERSION'))) return;
  fs.mkdirSync(pgDir, { recursive: true, mode: 0o700 });
  const user = postgresUser();
  if (user) chownTo(pgDir, user);
  runToEnd({ cmd: path.join(PG_BIN, 'initdb'), args: ['-D', pgDir, '-A', 'trust', '-U', 'temporal', '--no-sync'], log, asUser: user });
}

function chownTo(dir: string, user: string): void {
  const r = spawnSync('chown', [`${user}:`, dir]);
  if (r.status !== 0) throw new Error(`chown ${user} ${dir} failed: ${String(r.stderr)}`);
}

/** The postmaster in the foreground (the pid we record is its own); SIGINT is its fast shutdown. */
export function postgresSpec(pgDir: string, port: number, log: string): SpawnSpec {
  return {
    cmd: path.join(PG_BIN, 'postgres'),
    args: ['-D', pgDir, '-p', String(port), '-k', pgDir, '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300'],
    log,
    asUser: postgresUser(),
  };
}

export async function waitForPostgres(port: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const r = spawnSync(path.join(PG_BIN, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'temporal', '-d', 'postgres']);
    if (r.status === 0) return;
    await sleep(200);
  }
  throw new Error(`PostgreSQL on port ${port} did not accept connections within ${timeoutMs} ms`);
}
