// Finds or builds the Temporal CLI (which embeds the dev server and the Web UI).
// No dependencies beyond Node and Go: it runs before `npm ci` has installed anything.
//
// Three ways, in this order:
//   TEMPORAL_ADDRESS=host:port  use an existing server; nothing is built
//   TEMPORAL_CLI_PATH=/bin/temporal  use that binary
//   Go on PATH  `go install github.com/temporalio/cli/cmd/temporal@v1.5.1` into the cache
// v1.5.1 is the newest tag without a `replace` directive (later tags refuse go install).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pidAlive } from '../src/storage/pid-alive.mjs';

export const CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal';
export const CLI_VERSION = 'v1.5.1';

export function cacheRoot() {
  return process.env.TURNSTILE_CACHE || path.join(os.homedir(), '.cache', 'turnstile');
}

export function cliDir() {
  return path.join(cacheRoot(), `temporal-cli-${CLI_VERSION}`);
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

function sleep(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

// A breaker lock older than this was left by a process that died while breaking.
const BREAKER_STALE_MS = 30_000;

const readOrNull = (file) => {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (e) {
    if (e.code === 'ENOENT') return null;
    throw e;
  }
};

// Two waiters can find the same dead holder: if both simply removed the lock, the
// second could remove the lock the first had just taken, and both would build. So, as
// in src/storage/file-lock.ts, breakers serialise on `<lock>.break` and remove the
// lock only if it still holds the text they found stale.
// A lock file without a pid yet was caught between create and write; only this old is it a leftover.
const UNPARSABLE_STALE_MS = 10_000;

function breakStale(lock, staleText) {
  const breaker = `${lock}.break`;
  try {
    fs.writeFileSync(breaker, String(process.pid), { flag: 'wx' });
  } catch (e) {
    if (e.code !== 'EEXIST') throw e;
    const st = fs.statSync(breaker, { throwIfNoEntry: false });
    if (st && Date.now() - st.mtimeMs > BREAKER_STALE_MS) fs.rmSync(breaker, { force: true });
    return;
  }
  try {
    if (readOrNull(lock) === staleText) fs.rmSync(lock, { force: true });
  } finally {
    fs.rmSync(breaker, { force: true });
  }
}

// One build at a time per cache: a lock file created with O_EXCL holding our pid. A lock
// left by a dead process is taken over; a live one is waited for.
export function withBuildLock(dir, fn, what = 'the Temporal dev server') {
  fs.mkdirSync(dir, { recursive: true });
  const lock = path.join(dir, '.build.lock');
  for (let waitedMs = 0; ; waitedMs += 2000) {
    try {
      fs.writeFileSync(lock, String(process.pid), { flag: 'wx' });
      break;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
      const text = readOrNull(lock);
      if (text === null) continue; // released meanwhile
      const holder = Number(text) || 0;
      if (!holder) {
        // Empty: caught between its holder's create and write. Stale only when old.
        const st = fs.statSync(lock, { throwIfNoEntry: false });
        if (st && Date.now() - st.mtimeMs > UNPARSABLE_STALE_MS) breakStale(lock, text);
        else sleep(20);
        continue;
      }
      if (!pidAlive(holder)) {
        breakStale(lock, text);
        continue;
      }
      if (waitedMs % 30000 === 0) process.stderr.write(`waiting for another build of ${what} (pid ${holder}) ...\n`);
      sleep(2000);
    }
  }
  try {
    return fn();
  } finally {
    fs.rmSync(lock, { force: true });
  }
}

function buildWithGo(go, dir, binary) {
  return withBuildLock(dir, () => {
    if (fs.existsSync(binary)) return binary; // built by whoever held the lock
    process.stderr.write(`building the Temporal dev server, first time only (go install ${CLI_MODULE}@${CLI_VERSION}; a few minutes) ...\n`);
    const started = Date.now();
    const staging = fs.mkdtempSync(path.join(dir, 'staging-'));
    const env = { ...process.env, ...goEnv(), GOBIN: staging };
    const r = spawnSync(go, ['install', `${CLI_MODULE}@${CLI_VERSION}`], { env, stdio: ['ignore', 'inherit', 'inherit'] });
    const built = path.join(staging, 'temporal');
    if (r.status !== 0 || !fs.existsSync(built)) {
      fs.rmSync(staging, { recursive: true, force: true });
      throw new Error(`go install ${CLI_MODULE}@${CLI_VERSION} failed (exit ${r.status}); see the output above`);
    }
    fs.renameSync(built, binary); // atomic: a half-built binary is never visible
    fs.rmSync(staging, { recursive: true, force: true });
    const mb = (fs.statSync(binary).size / 1e6).toFixed(1);
    process.stderr.write(`built ${binary} (${mb} MB) in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
    return binary;
  });
}

/** Returns { address } for an existing server or { binary } for a CLI to start one. */
export function ensureTemporal() {
  if (process.env.TEMPORAL_ADDRESS) return { address: process.env.TEMPORAL_ADDRESS };
  if (process.env.TEMPORAL_CLI_PATH) {
    if (!fs.existsSync(process.env.TEMPORAL_CLI_PATH)) {
      throw new Error(`TEMPORAL_CLI_PATH=${process.env.TEMPORAL_CLI_PATH} does not exist`);
    }
    return { binary: process.env.TEMPORAL_CLI_PATH };
  }
  const dir = cliDir();
  const binary = path.join(dir, 'temporal');
  if (fs.existsSync(binary)) return { binary };
  const go = which('go');
  if (!go) {
    throw new Error(
      'no Temporal server available. Either: (1) install Go (>= 1.24) so the dev server can be built from the Go module proxy, ' +
        '(2) set TEMPORAL_CLI_PATH=/path/to/temporal (a Temporal CLI binary), or ' +
        '(3) set TEMPORAL_ADDRESS=host:port to use a running server',
    );
  }
  return { binary: buildWithGo(go, dir, binary) };
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
