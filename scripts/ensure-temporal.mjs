// Finds or builds the embedded dev server's programs: the Temporal server
// (go.temporal.io/server/cmd/server) and the Temporal UI server, the same builds the
// local cluster runs (scripts/ensure-cluster.mjs builds and caches them). Also the
// cache root, Go environment and build lock every build script shares. No dependencies
// beyond Node and Go: it runs before `npm ci` has installed anything.
//
// Three ways, in this order:
//   TEMPORAL_ADDRESS=host:port  use an existing server; nothing is built
//   TEMPORAL_SERVER_PATH=/bin/server  use that Temporal server binary (and
//     TEMPORAL_UI_SERVER_PATH=/bin/ui-server for the UI, else it is built when Go is there)
//   Go on PATH  `go install` both into the cache (first time only)
// The Temporal CLI (`temporal server start-dev`) ran the dev server before; no CLI that
// `go install` accepts embeds a server new enough (>= 1.30.2, for Worker Deployment
// upgrades at continue-as-new): tags from v1.6.0 on carry a `replace` directive.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { withFileLockSync } from '../src/storage/lock-file.mjs';
import { PROGRAMS, SERVER_VERSION, ensureProgram, programDir } from './ensure-cluster.mjs';

export function cacheRoot() {
  return process.env.TURNSTILE_CACHE || path.join(os.homedir(), '.cache', 'turnstile');
}

/**
 * Where the lock of the Temporal builds lives (withBuildLock): one Go build at a time would
 * otherwise starve 2 cores. The name is where the Temporal CLI was built before; kept so
 * a build started from an older checkout still shares the lock.
 */
export function buildLockDir() {
  return path.join(cacheRoot(), 'temporal-cli-v1.5.1');
}

export function which(cmd) {
  const r = spawnSync(process.platform === 'win32' ? 'where' : 'which', [cmd], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim().split('\n')[0] : null;
}

/** Go caches under the turnstile cache, writable so a later `rm -rf` of the cache works. */
export function goEnv() {
  return {
    GOMODCACHE: process.env.GOMODCACHE || path.join(cacheRoot(), 'go-mod'),
    GOCACHE: process.env.GOCACHE || path.join(cacheRoot(), 'go-build'),
    GOFLAGS: [process.env.GOFLAGS, '-modcacherw'].filter(Boolean).join(' '),
  };
}

// One build at a time per cache: the lock file of src/storage/lock-file.mjs, holding
// our bare pid (what builds from older checkouts write and read). A lock left by a dead
// process is taken over; a live one is waited for, however long its build takes.
export function withBuildLock(dir, fn, what = 'the Temporal dev server') {
  fs.mkdirSync(dir, { recursive: true });
  let said = -1;
  const onWait = (holder, waitedMs) => {
    const every30s = Math.floor(waitedMs / 30_000);
    if (every30s > said) process.stderr.write(`waiting for another build of ${what} (pid ${holder}) ...\n`);
    said = every30s;
  };
  return withFileLockSync(path.join(dir, '.build.lock'), fn, { text: String(process.pid), timeoutMs: Infinity, maxWaitMs: 2000, onWait });
}

const fromEnv = (name) => {
  const p = process.env[name];
  if (!p) return null;
  if (!fs.existsSync(p)) throw new Error(`${name}=${p} does not exist`);
  return p;
};

const built = (name) => PROGRAMS[name].binaries.every((b) => fs.existsSync(path.join(programDir(name), b)));

/**
 * Returns { address } for an existing server, or { binary, ui } to start one: the Temporal
 * server binary and the UI server's (ui null when TEMPORAL_SERVER_PATH is set and the UI
 * can be neither found nor built: only a headless server can start then).
 */
export function ensureTemporal() {
  if (process.env.TEMPORAL_ADDRESS) return { address: process.env.TEMPORAL_ADDRESS };
  const go = which('go');
  let binary = fromEnv('TEMPORAL_SERVER_PATH');
  if (!binary) {
    if (!go && !built('temporal-server')) {
      throw new Error(
        `no Temporal server available. Either: (1) install Go (>= 1.26.8) so the server ${SERVER_VERSION} can be built from the Go module proxy, ` +
          '(2) set TEMPORAL_SERVER_PATH=/path/to/server (a Temporal server binary, go.temporal.io/server/cmd/server) and, for the Web UI, TEMPORAL_UI_SERVER_PATH=/path/to/ui-server, or ' +
          '(3) set TEMPORAL_ADDRESS=host:port to use a running server',
      );
    }
    binary = ensureProgram('temporal-server').server;
  }
  const ui = fromEnv('TEMPORAL_UI_SERVER_PATH') ?? (go || built('temporal-ui-server') ? ensureProgram('temporal-ui-server').server : null);
  return { binary, ui };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    const r = ensureTemporal();
    console.log(r.binary ?? r.address);
  } catch (e) {
    console.error(`turnstile: ${e.message}`);
    process.exit(1);
  }
}
