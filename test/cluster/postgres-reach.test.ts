import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import { canEnter, dirsOnPath, firstBarrier, lookupAccount, postgresReachProblem, refusal, type Account, type DirOnPath } from '../../src/cluster/postgres-reach';

// Under root, the cluster's PostgreSQL runs as user postgres: a --dir under a folder it
// cannot enter (/root is 0700) is refused up front with what to do, instead of initdb
// failing with "Permission denied" in a log after everything was fetched.

const pg: Account = { name: 'postgres', uid: 101, gids: [104, 103] };
const dir = (p: string, uid: number, gid: number, mode: number): DirOnPath => ({ path: p, uid, gid, mode, exists: true });

describe('canEnter and firstBarrier', () => {
  it("use the owner's bits for the owner, the group's for a member, the others' otherwise", () => {
    expect(canEnter(dir('/root', 0, 0, 0o700), pg)).toBe(false);
    expect(canEnter(dir('/root', 0, 0, 0o701), pg)).toBe(true);
    expect(canEnter(dir('/srv/pg', 101, 0, 0o700), pg)).toBe(true);
    expect(canEnter(dir('/srv/pg', 101, 0, 0o077), pg)).toBe(false); // the owner gets the owner's bits only
    expect(canEnter(dir('/srv/ssl', 0, 103, 0o710), pg)).toBe(true);
    expect(canEnter(dir('/srv/ssl', 0, 103, 0o701), pg)).toBe(false);
    expect(canEnter(dir('/root', 0, 0, 0o700), { name: 'root', uid: 0, gids: [0] })).toBe(true);
  });

  it('find the first directory from / down that the account cannot pass', () => {
    const chain = [dir('/', 0, 0, 0o755), dir('/root', 0, 0, 0o700), dir('/root/x', 0, 0, 0o700)];
    expect(firstBarrier(chain, pg)?.path).toBe('/root');
    expect(firstBarrier([dir('/', 0, 0, 0o755), dir('/var', 0, 0, 0o755)], pg)).toBeNull();
  });
});

describe('dirsOnPath', () => {
  const stats: Record<string, { uid: number; gid: number; mode: number }> = { '/': { uid: 0, gid: 0, mode: 0o755 }, '/root': { uid: 0, gid: 0, mode: 0o700 } };
  const stat = (p: string) => stats[p] ?? null;

  it('takes existing directories as they are and missing ones as mkdir -p makes them under the umask', () => {
    expect(dirsOnPath('/root/a/b', stat, { uid: 0, gid: 0, umask: 0o077 })).toEqual([
      { path: '/', uid: 0, gid: 0, mode: 0o755, exists: true },
      { path: '/root', uid: 0, gid: 0, mode: 0o700, exists: true },
      { path: '/root/a', uid: 0, gid: 0, mode: 0o700, exists: false },
      { path: '/root/a/b', uid: 0, gid: 0, mode: 0o700, exists: false },
    ]);
    expect(dirsOnPath('/var/c', stat, { uid: 0, gid: 0, umask: 0o022 }).map((d) => [d.path, d.mode, d.exists])).toEqual([
      ['/', 0o755, true],
      ['/var', 0o755, false],
      ['/var/c', 0o755, false],
    ]);
  });
});

describe('refusal', () => {
  it('names the folder, what blocks it and both ways out, on one line', () => {
    expect(refusal('/root/c', pg, dir('/root', 0, 0, 0o700), 'root', '/var/tmp/turnstile-cluster')).toBe(
      '--dir: /root/c is out of reach of user postgres, which PostgreSQL runs as under root: it cannot enter /root (mode 0700, owner root); use a --dir it can reach (e.g. --dir /var/tmp/turnstile-cluster) or run: chmod o+x /root',
    );
    expect(refusal('/srv/c', pg, { path: '/srv/c', uid: 0, gid: 0, mode: 0o700, exists: false }, 'root', null)).toBe(
      '--dir: /srv/c is out of reach of user postgres, which PostgreSQL runs as under root: it could not enter /srv/c, which would be made with mode 0700 (umask 0077); use a --dir it can reach or run with umask 022',
    );
  });
});

// The real check on a real folder: only as root (as CI runs) is PostgreSQL run as another user.
const asRoot = process.getuid?.() === 0;
const postgres = asRoot ? lookupAccount('postgres') : null;
const whyNot = !asRoot
  ? `runs as uid ${process.getuid?.()}, not root: PostgreSQL then runs as this user, so no folder is out of its reach`
  : !postgres
    ? 'there is no postgres user (apt-get install -y postgresql-15): nothing to check against'
    : null;

describe('postgresReachProblem on this host', () => {
  const top = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-reach-')); // mkdtemp makes it 0700
  afterAll(() => fs.rmSync(top, { recursive: true, force: true }));

  it('refuses a folder inside a 0700 folder and accepts it once postgres may pass', (ctx) => {
    if (whyNot) ctx.skip(whyNot);
    fs.chmodSync(top, 0o700);
    const cluster = path.join(top, 'cluster');
    expect(postgresReachProblem(cluster, 0o022)).toMatch(new RegExp(`^--dir: ${cluster} is out of reach of user postgres, .* it cannot enter ${top} \\(mode 0700, owner root\\); .* or run: chmod o\\+x ${top}$`));
    fs.chmodSync(top, 0o711);
    expect(postgresReachProblem(cluster, 0o022)).toBeNull();
    expect(postgresReachProblem(cluster, 0o077)).toMatch(/it could not enter .*cluster, which would be made with mode 0700 \(umask 0077\)/);
  });

  it('turnstile cluster up refuses it with exit 2 and one line, before creating or starting anything', async (ctx) => {
    if (whyNot) ctx.skip(whyNot);
    fs.chmodSync(top, 0o700);
    const cluster = path.join(top, 'up');
    const r = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile(process.execPath, [path.join(PROJECT_ROOT, 'scripts', 'turnstile.mjs'), 'cluster', 'up', '--dir', cluster], { timeout: 90_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      ),
    );
    expect({ code: r.code, stdout: r.stdout, lines: r.stderr.trim().split('\n').length }, r.stderr).toEqual({ code: 2, stdout: '', lines: 1 });
    expect(r.stderr).toMatch(new RegExp(`^turnstile: --dir: ${cluster} is out of reach of user postgres, .*cannot enter ${top} `));
    expect(fs.existsSync(cluster)).toBe(false);
  });
});
