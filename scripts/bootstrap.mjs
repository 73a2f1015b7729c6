// Entry of `npm start` and `npm test` on a fresh clone: installs the npm dependencies
// when missing (cache outside the clone), compiles the CLI into dist/ when a source
// changed, finds or builds the Temporal server and UI server of the embedded dev server,
// then hands over. Plain Node.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot, ensureTemporal, which } from './ensure-temporal.mjs';
import { CLI_JS, ensureBuilt } from './build.mjs';
import { ensureSeaweedfs } from './ensure-seaweedfs.mjs';
import { PROGRAMS, ensureProgram } from './ensure-cluster.mjs';
import { runSuite } from './test-lanes.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/**
 * node_modules as `npm ci` made it for this exact lockfile and Node, kept outside the
 * clone: a fresh clone copies it (~1 s) instead of installing (~22 s of a CI run).
 * Nothing is run or written in node_modules between the install and the copy, so the
 * copy holds only what npm put there.
 */
function installedCopy() {
  const digest = createHash('sha256').update(fs.readFileSync(path.join(root, 'package-lock.json'))).update(process.version).digest('hex').slice(0, 16);
  return path.join(cacheRoot(), 'node_modules', digest);
}

/** cp -a where there is one (hard to beat for 500 MiB of small files); false when it failed or is missing. */
function copyTree(from, to) {
  return spawnSync('cp', ['-a', from, to], { stdio: 'ignore' }).status === 0;
}

function ensureDependencies() {
  const installed = path.join(root, 'node_modules', '.package-lock.json');
  const lock = path.join(root, 'package-lock.json');
  if (fs.existsSync(installed) && fs.statSync(installed).mtimeMs >= fs.statSync(lock).mtimeMs) return;
  const kept = installedCopy();
  const target = path.join(root, 'node_modules');
  if (fs.existsSync(path.join(kept, '.package-lock.json'))) {
    fs.rmSync(target, { recursive: true, force: true });
    if (copyTree(kept, target)) {
      // Newer than the clone's lockfile, so the check above holds next time.
      const now = new Date();
      fs.utimesSync(installed, now, now);
      process.stderr.write(`npm dependencies copied from ${kept}\n`);
      return;
    }
    fs.rmSync(target, { recursive: true, force: true });
  }
  process.stderr.write('installing npm dependencies (npm ci) ...\n');
  const r = spawnSync(npm, ['ci', '--no-audit', '--no-fund', '--prefer-offline', '--cache', path.join(cacheRoot(), 'npm')], {
    cwd: root,
    stdio: 'inherit',
  });
  if (r.status !== 0) {
    console.error(`turnstile: npm ci failed (exit ${r.status})`);
    process.exit(1);
  }
  // Kept for the next clone: copied under a temporary name and renamed, so a copy cut
  // short is never taken; the copies of other lockfiles go (each is ~0.5 GiB).
  const parent = path.dirname(kept);
  fs.mkdirSync(parent, { recursive: true });
  const tmp = `${kept}.${process.pid}.tmp`;
  if (copyTree(target, tmp)) {
    fs.rmSync(kept, { recursive: true, force: true });
    try {
      fs.renameSync(tmp, kept);
    } catch {
      // Another run kept its copy of the same lockfile first.
    }
  }
  fs.rmSync(tmp, { recursive: true, force: true });
  // A temporary copy younger than an hour may be another run's, still copying.
  const stale = (p) => !p.endsWith('.tmp') || Date.now() - fs.statSync(p).mtimeMs > 3_600_000;
  for (const other of fs.readdirSync(parent).map((n) => path.join(parent, n))) if (other !== kept && stale(other)) fs.rmSync(other, { recursive: true, force: true });
}

/** Runs cmd; exits with its status, or on success calls `then` when given. */
function run(cmd, args, env, then) {
  const child = spawn(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
  // Ctrl-C reaches the whole foreground process group, the child included: sending it a
  // second SIGINT would cut its orderly shutdown short. Other signals are passed on.
  process.on('SIGINT', () => {});
  const pass = (sig) => child.kill(sig);
  for (const sig of ['SIGTERM', 'SIGHUP']) process.on(sig, pass);
  child.on('exit', (code, signal) => {
    const status = code ?? (signal ? 1 : 0);
    for (const sig of ['SIGTERM', 'SIGHUP']) process.off(sig, pass);
    if (status === 0 && then) then();
    else process.exit(status);
  });
}

const mode = process.argv[2];
ensureDependencies();
// After the install (esbuild is a devDependency); the tests run the compiled CLI too.
try {
  if (await ensureBuilt()) process.stderr.write(`built ${path.relative(root, CLI_JS)}\n`);
} catch (e) {
  console.error(`turnstile: build of ${CLI_JS} failed: ${e.message.split('\n')[0]}`);
  process.exit(1);
}
let server;
try {
  server = ensureTemporal();
} catch (e) {
  console.error(`turnstile: ${e.message}`);
  process.exit(1);
}
const env = server.address ? { TEMPORAL_ADDRESS: server.address } : { TEMPORAL_SERVER_PATH: server.binary, ...(server.ui ? { TEMPORAL_UI_SERVER_PATH: server.ui } : {}) };
const bin = (name) => path.join(root, 'node_modules', '.bin', name);
if (mode === 'test') {
  // Every other program the suite starts (SeaweedFS, the compose check; the cluster runs
  // the dev server's Temporal server and UI server, and the schema tool built with the
  // server), built now on a fresh machine (~20 minutes cold, nothing once cached). Built inside the run, the builds block the test process that waits
  // for a server with a deadline (a cold CI run failed so: the dev server "did not
  // answer within 180000 ms" while SeaweedFS built for 565 s in the same process).
  // Without Go the tests that need them say what is missing.
  try {
    if (process.env.WEED_PATH || which('go')) ensureSeaweedfs();
    if (which('go')) for (const name of Object.keys(PROGRAMS)) ensureProgram(name);
  } catch (e) {
    console.error(`turnstile: ${e.message.split('\n')[0]}`);
    process.exit(1);
  }
  // The whole suite starts with the static checks (types, and the lint rules that keep
  // workflow code deterministic), both at once: one core each; `npm test -- <files>` runs
  // only those test files.
  if (process.argv.length === 3) {
    const checks = [['tsc', ['--noEmit', '-p', '.']], ['eslint', ['.']]].map(([name, args]) => {
      process.stderr.write(`${name} ...\n`);
      const child = spawn(bin(name), args, { cwd: root, stdio: 'inherit' });
      return new Promise((resolve) => child.on('exit', (code) => resolve({ name, ok: code === 0 })));
    });
    const failed = (await Promise.all(checks)).filter((c) => !c.ok);
    if (failed.length > 0) {
      console.error(`turnstile: ${failed.map((c) => c.name).join(' and ')} failed`);
      process.exit(1);
    }
  }
  if (process.argv.length === 3) process.exit(await runSuite({ bin: bin('vitest'), env, cwd: root }));
  else run(bin('vitest'), ['run', ...process.argv.slice(3)], env);
} else if (mode === 'start') {
  // The worker malloc tunables in the dev process, whose workers merge: as README
  // "Running workers" asks of every worker (src/worker/allocator-env.ts says why; this
  // file runs before anything is built, so the list is repeated here).
  const want = ['glibc.malloc.mmap_threshold=33554432', 'glibc.malloc.trim_threshold=67108864', 'glibc.malloc.arena_max=1'];
  const set = (process.env.GLIBC_TUNABLES ?? '').split(':').filter(Boolean);
  const missing = want.filter((kv) => !set.some((s) => s.startsWith(`${kv.split('=')[0]}=`)));
  const tunables = missing.length ? { GLIBC_TUNABLES: [...set, ...missing].join(':') } : {};
  run(process.execPath, [path.join(root, 'scripts', 'turnstile.mjs'), 'dev', '--demo', ...process.argv.slice(3)], { ...env, ...tunables });
} else {
  console.error('usage: node scripts/bootstrap.mjs start|test [args]');
  process.exit(2);
}
