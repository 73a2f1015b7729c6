import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { postgresUser } from './processes';

// Under root, PostgreSQL runs as the `postgres` user (postgres.ts), which must pass
// through every directory above the cluster's database. A folder it cannot enter
// (/root is 0700) made initdb fail with "Permission denied" in a log file, after the
// binaries were fetched. This finds that out first and says what to do, in one line.

/** A directory on the way to the database, as stat shows it (or as mkdir -p will make it). */
export interface DirOnPath {
  path: string;
  uid: number;
  gid: number;
  /** Permission bits, e.g. 0o755. */
  mode: number;
  /** False: missing now, `mkdir -p` makes it with this owner and mode. */
  exists: boolean;
}

export interface Account {
  name: string;
  uid: number;
  gids: readonly number[];
}

/** Whether `who` may pass through `d`: the owner's bits, else the group's, else the others', as the kernel decides without ACLs. */
export function canEnter(d: DirOnPath, who: Account): boolean {
  if (who.uid === 0) return true;
  if (d.uid === who.uid) return (d.mode & 0o100) !== 0;
  if (who.gids.includes(d.gid)) return (d.mode & 0o010) !== 0;
  return (d.mode & 0o001) !== 0;
}

/** The first directory, from / down, that `who` cannot pass through, or null. */
export function firstBarrier(dirs: readonly DirOnPath[], who: Account): DirOnPath | null {
  return dirs.find((d) => !canEnter(d, who)) ?? null;
}

/**
 * Every directory from / down to `dir` (absolute, symlinks resolved): the existing ones as
 * `stat` finds them, the missing ones as `mkdir -p` by `creator` under its umask makes them.
 */
export function dirsOnPath(dir: string, stat: (p: string) => Omit<DirOnPath, 'path' | 'exists'> | null, creator: { uid: number; gid: number; umask: number }): DirOnPath[] {
  const parts = dir.split(path.sep).filter(Boolean);
  const out: DirOnPath[] = [];
  let at: string = path.sep;
  for (const part of ['', ...parts]) {
    at = part ? path.join(at, part) : at;
    const found = out.every((d) => d.exists) ? stat(at) : null;
    out.push(found ? { path: at, ...found, exists: true } : { path: at, uid: creator.uid, gid: creator.gid, mode: 0o777 & ~creator.umask, exists: false });
  }
  return out;
}

const octal = (mode: number): string => `0${(mode & 0o777).toString(8).padStart(3, '0')}`;

/** The one-line refusal: what blocks, and the two ways out. */
export function refusal(dir: string, who: Account, barrier: DirOnPath, owner: string, otherDir: string | null): string {
  const why = barrier.exists ? `cannot enter ${barrier.path} (mode ${octal(barrier.mode)}, owner ${owner})` : `could not enter ${barrier.path}, which would be made with mode ${octal(barrier.mode)} (umask ${octal(0o777 & ~barrier.mode)})`;
  const fix = barrier.exists ? `run: chmod o+x ${barrier.path}` : 'run with umask 022';
  return `--dir: ${dir} is out of reach of user ${who.name}, which PostgreSQL runs as under root: it ${why}; use a --dir it can reach${otherDir ? ` (e.g. --dir ${otherDir})` : ''} or ${fix}`;
}

// ---- the host's facts ----

/** The account's uid and groups from `id`, or null when there is no such user. */
export function lookupAccount(name: string): Account | null {
  const uid = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  const groups = spawnSync('id', ['-G', name], { encoding: 'utf8' });
  if (uid.status !== 0 || groups.status !== 0) return null;
  return { name, uid: Number(uid.stdout.trim()), gids: groups.stdout.trim().split(/\s+/).map(Number) };
}

function statDir(p: string): Omit<DirOnPath, 'path' | 'exists'> | null {
  try {
    const s = fs.statSync(p);
    return { uid: s.uid, gid: s.gid, mode: s.mode & 0o777 };
  } catch {
    return null;
  }
}

/** The longest existing prefix of `dir` with its symlinks resolved, then the rest as given. */
function realDir(dir: string): string {
  const abs = path.resolve(dir);
  for (let at = abs; ; at = path.dirname(at)) {
    try {
      return path.join(fs.realpathSync(at), path.relative(at, abs));
    } catch {
      if (at === path.dirname(at)) return abs;
    }
  }
}

/** Asks the kernel itself (it also knows ACLs): can `user` pass through `dir`? */
function probeEnter(user: string, dir: string): boolean {
  return spawnSync('setpriv', ['--reuid', user, '--regid', user, '--init-groups', '--', 'test', '-x', dir]).status === 0;
}

function ownerName(uid: number): string {
  const r = spawnSync('id', ['-nu', String(uid)], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : String(uid);
}

/** A folder to suggest instead, when its whole path is open to `who`. */
const OTHER_DIR = '/var/tmp/turnstile-cluster';

/**
 * Why PostgreSQL could not reach a database under `clusterDir`, as one line, or null
 * when it can (or runs as ourselves: not root). Reads the directories, starts nothing.
 */
export function postgresReachProblem(clusterDir: string, umask = process.umask()): string | null {
  const user = postgresUser();
  if (!user) return null;
  const who = lookupAccount(user);
  if (!who) return null; // starting it names the missing user
  const creator = { uid: process.geteuid?.() ?? 0, gid: process.getegid?.() ?? 0, umask };
  const barrier = firstBarrier(dirsOnPath(realDir(clusterDir), statDir, creator), who);
  if (!barrier || (barrier.exists && probeEnter(user, barrier.path))) return null;
  const otherOpen = firstBarrier(dirsOnPath(realDir(OTHER_DIR), statDir, creator), who) === null;
  return refusal(path.resolve(clusterDir), who, barrier, ownerName(barrier.uid), otherOpen ? OTHER_DIR : null);
}
