// Finds or builds the Go programs of the embedded dev server, of the local cluster
// (`turnstile cluster up`) and of the compose check: the Temporal server and its schema
// tool (the dev server runs the same server binary on SQLite), the Temporal UI server, and
// our tiny compose-go validator (tools/compose-check). Same cache, module cache and build
// lock as every build script (scripts/ensure-temporal.mjs): one build at a time, binaries
// under ~/.cache/turnstile/<name>-<version>/, renamed into place only when complete.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildLockDir, cacheRoot, withBuildLock } from './ensure-temporal.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

// Server >= 1.30.2 for Worker Deployment upgrades at continue-as-new; v1.32.1 is the
// newest whose go.mod asks for no newer Go than 1.26.8 (v1.32.2 wants >= 1.26.10).
export const SERVER_VERSION = 'v1.32.1';
// The newest UI server whose go.mod asks for no newer Go than this machine's 1.26.8
// (v2.56.1 and later want >= 1.26.9 or 1.26.10, which `go install` refuses with GOTOOLCHAIN=local).
export const UI_VERSION = 'v2.55.0';
export const COMPOSE_GO_VERSION = 'v2.16.2';

// name -> how to build it. `pkgs` are `go install` targets (one module per entry), or
// `srcDir` a module of ours built with `go build` (its go.sum pins compose-go).
export const PROGRAMS = {
  'temporal-server': { version: SERVER_VERSION, pkgs: [`go.temporal.io/server/cmd/server@${SERVER_VERSION}`, `go.temporal.io/server/cmd/tools/sql@${SERVER_VERSION}`], binaries: ['server', 'sql'] },
  'temporal-ui-server': { version: UI_VERSION, pkgs: [`github.com/temporalio/ui-server/v2/cmd/server@${UI_VERSION}`], binaries: ['server'] },
  'compose-check': { version: COMPOSE_GO_VERSION, srcDir: path.join(root, 'tools', 'compose-check'), binaries: ['compose-check'] },
};

// Our own module's binary is also keyed by its sources, so an edit rebuilds it.
function sourceDigest(dir) {
  const h = createHash('sha256');
  for (const f of ['main.go', 'go.mod', 'go.sum']) h.update(fs.readFileSync(path.join(dir, f)));
  return h.digest('hex').slice(0, 10);
}

export function programDir(name) {
  const spec = PROGRAMS[name];
  return path.join(cacheRoot(), `${name}-${spec.version}${spec.srcDir ? `-${sourceDigest(spec.srcDir)}` : ''}`);
}

function goEnv(extra) {
  return {
    ...process.env,
    ...extra,
    GOMODCACHE: process.env.GOMODCACHE || path.join(cacheRoot(), 'go-mod'),
    GOCACHE: process.env.GOCACHE || path.join(cacheRoot(), 'go-build'),
    GOFLAGS: [process.env.GOFLAGS, '-modcacherw'].filter(Boolean).join(' '),
  };
}

function run(args, opts) {
  const r = spawnSync('go', args, { stdio: ['ignore', 'inherit', 'inherit'], ...opts });
  if (r.error?.code === 'ENOENT') throw new Error('Go is not on PATH: install Go (>= 1.26.8) to build the Temporal programs');
  if (r.status !== 0) throw new Error(`go ${args.join(' ')} failed (exit ${r.status}); see the output above`);
}

/** Path of each binary of program `name` (built on first use). */
export function ensureProgram(name) {
  const spec = PROGRAMS[name];
  const dir = programDir(name);
  const paths = Object.fromEntries(spec.binaries.map((b) => [b, path.join(dir, b)]));
  if (Object.values(paths).every((p) => fs.existsSync(p))) return paths;
  // One lock for every Temporal build: two Go builds at once would starve 2 cores.
  withBuildLock(buildLockDir(), () => {
    if (Object.values(paths).every((p) => fs.existsSync(p))) return;
    fs.mkdirSync(dir, { recursive: true });
    const started = Date.now();
    process.stderr.write(`building ${name} ${spec.version}, first time only (a few minutes) ...\n`);
    const staging = fs.mkdtempSync(path.join(dir, 'staging-'));
    try {
      if (spec.srcDir) {
        run(['build', '-o', path.join(staging, spec.binaries[0]), '.'], { cwd: spec.srcDir, env: goEnv() });
      } else {
        // One `go install` per module: `go install a@v b@v` requires both in one module.
        run(['install', ...spec.pkgs], { env: goEnv({ GOBIN: staging }) });
      }
      for (const b of spec.binaries) {
        // go install names a binary after its package directory: both server and ui are `server`.
        fs.renameSync(path.join(staging, b), paths[b]);
      }
    } finally {
      fs.rmSync(staging, { recursive: true, force: true });
    }
    process.stderr.write(`built ${name} in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
  }, `${name} ${spec.version}`);
  return paths;
}

/** The schema directory of the Temporal server module (setup/update-schema read it). */
export function serverSchemaDir() {
  const mod = process.env.GOMODCACHE || path.join(cacheRoot(), 'go-mod');
  return path.join(mod, `go.temporal.io/server@${SERVER_VERSION}`, 'schema', 'postgresql', 'v12');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const names = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(PROGRAMS);
  try {
    for (const n of names) {
      if (!PROGRAMS[n]) throw new Error(`unknown program ${n} (one of ${Object.keys(PROGRAMS).join(', ')})`);
      console.log(JSON.stringify({ [n]: ensureProgram(n) }));
    }
  } catch (e) {
    console.error(`turnstile: ${e.message}`);
    process.exit(1);
  }
}
