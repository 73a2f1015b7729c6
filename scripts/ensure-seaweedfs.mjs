// Finds or builds SeaweedFS (`weed`), the S3-compatible server used by the tests and by
// `turnstile dev --storage s3`. Plain Node, like ensure-temporal.mjs, whose cache root,
// Go env and build lock it shares (one Go build at a time per cache directory).
//
//   WEED_PATH=/bin/weed  use that binary
//   Go on PATH           build it into ~/.cache/turnstile/seaweedfs-<version>/weed
//
// The module has a `replace` directive, so `go install module@version` refuses it: we
// build from a small wrapper module that requires that version and repeats the replace.
// Its go.mod says `go 1.26.6`; an older local Go fetches that toolchain (GOTOOLCHAIN=auto).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { cacheRoot, goEnv, which, withBuildLock } from './ensure-temporal.mjs';

export const WEED_MODULE = 'github.com/seaweedfs/seaweedfs';
export const WEED_VERSION = 'v0.0.0-20261109003541-7506e5f91cd6';
const WEED_GO = '1.26.6';
const WEED_REPLACE = 'github.com/tyler-smith/go-bip39 => github.com/cosmos/go-bip39 v1.0.0';

export function weedDir() {
  return path.join(cacheRoot(), `seaweedfs-${WEED_VERSION}`);
}

function run(go, args, cwd, env) {
  const r = spawnSync(go, args, { cwd, env, stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error(`go ${args.join(' ')} failed (exit ${r.status}); see the output above`);
}

function buildWithGo(go, dir, binary) {
  return withBuildLock(dir, () => {
    if (fs.existsSync(binary)) return binary; // built by whoever held the lock
    process.stderr.write(`building SeaweedFS, first time only (${WEED_MODULE}@${WEED_VERSION}; about 10 minutes cold) ...\n`);
    const started = Date.now();
    const staging = fs.mkdtempSync(path.join(dir, 'staging-'));
    try {
      fs.writeFileSync(
        path.join(staging, 'go.mod'),
        `module turnstile.invalid/weedbuild\n\ngo ${WEED_GO}\n\nrequire ${WEED_MODULE} ${WEED_VERSION}\n\nreplace ${WEED_REPLACE}\n`,
      );
      fs.writeFileSync(path.join(staging, 'tools.go'), `//go:build tools\n\npackage tools\n\nimport _ "${WEED_MODULE}/weed"\n`);
      const env = { ...process.env, ...goEnv(), GOTOOLCHAIN: process.env.GOTOOLCHAIN || 'auto' };
      run(go, ['mod', 'tidy'], staging, env);
      run(go, ['build', '-o', 'weed', `${WEED_MODULE}/weed`], staging, env);
      fs.renameSync(path.join(staging, 'weed'), binary); // atomic: a half-built binary is never visible
    } finally {
      fs.rmSync(staging, { recursive: true, force: true });
    }
    const mb = (fs.statSync(binary).size / 1e6).toFixed(1);
    process.stderr.write(`built ${binary} (${mb} MB) in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
    return binary;
  }, 'SeaweedFS');
}

/** Path of a `weed` binary, built on first use. */
export function ensureSeaweedfs() {
  if (process.env.WEED_PATH) {
    if (!fs.existsSync(process.env.WEED_PATH)) throw new Error(`WEED_PATH=${process.env.WEED_PATH} does not exist`);
    return process.env.WEED_PATH;
  }
  const dir = weedDir();
  const binary = path.join(dir, 'weed');
  if (fs.existsSync(binary)) return binary;
  const go = which('go');
  if (!go) {
    throw new Error(`no SeaweedFS available for S3 mode. Either install Go (>= ${WEED_GO}, or older with GOTOOLCHAIN=auto) so it can be built, or set WEED_PATH=/path/to/weed`);
  }
  return buildWithGo(go, dir, binary);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    console.log(ensureSeaweedfs());
  } catch (e) {
    console.error(`turnstile: ${e.message}`);
    process.exit(1);
  }
}
