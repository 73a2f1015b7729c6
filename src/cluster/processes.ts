import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { pidAlive } from '../storage/pid-alive.mjs';
import { sleep } from '../util/sleep';

// Processes of the local cluster outlive `turnstile cluster up` (status and down are
// separate commands), so each is started detached in its own session with its output in
// a log file, and is known afterwards only by the pid recorded in cluster.json.

export interface Spawned {
  pid: number;
}

export interface SpawnSpec {
  cmd: string;
  args: string[];
  log: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Run as this system user (PostgreSQL refuses root): via setpriv, which execs, so the pid is the program's. */
  asUser?: string;
}

/** The user the PostgreSQL programs run as: ourselves, unless we are root (initdb and postgres refuse it). */
export const postgresUser = (): string | undefined => (process.getuid?.() === 0 ? 'postgres' : undefined);

function withUser(spec: SpawnSpec): [string, string[]] {
  if (!spec.asUser) return [spec.cmd, spec.args];
  return ['setpriv', ['--reuid', spec.asUser, '--regid', spec.asUser, '--init-groups', '--', spec.cmd, ...spec.args]];
}

export function spawnDetached(spec: SpawnSpec): Spawned {
  const out = fs.openSync(spec.log, 'a');
  const [cmd, args] = withUser(spec);
  const child = spawn(cmd, args, { cwd: spec.cwd, env: spec.env ?? process.env, stdio: ['ignore', out, out], detached: true });
  fs.closeSync(out);
  child.unref();
  if (!child.pid) throw new Error(`could not start ${spec.cmd}`);
  return { pid: child.pid };
}

/** Runs a setup program to completion; its output goes to the log, its failure names the log. */
export function runToEnd(spec: SpawnSpec): void {
  const out = fs.openSync(spec.log, 'a');
  const [cmd, args] = withUser(spec);
  const r = spawnSync(cmd, args, { cwd: spec.cwd, env: spec.env ?? process.env, stdio: ['ignore', out, out] });
  fs.closeSync(out);
  if (r.status !== 0) throw new Error(`${spec.cmd} ${spec.args.slice(0, 3).join(' ')} ... failed (exit ${r.status ?? r.signal}); see ${spec.log}`);
}

/** Sends `signal`, waits up to `graceMs` for the process to go, then SIGKILLs it. */
export async function stopPid(pid: number, signal: NodeJS.Signals = 'SIGTERM', graceMs = 15_000): Promise<void> {
  if (!pidAlive(pid)) return;
  try {
    process.kill(pid, signal);
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!alive(pid)) return;
    await sleep(100);
  }
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    /* gone meanwhile */
  }
  while (alive(pid)) await sleep(50);
}

/** Alive and not a zombie: a detached child of this process stays a zombie until reaped. */
export function alive(pid: number): boolean {
  if (!pidAlive(pid)) return false;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true; // no procfs: trust kill(0)
  }
}
