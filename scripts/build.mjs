// Compiles the command line (src/cli/main.ts and everything it imports from src/,
// workflows/ and activities/) into one CommonJS file, dist/cli.js, so `turnstile` starts
// without transpiling TypeScript on every run. npm packages stay external: they are
// `require`d from node_modules exactly as lancedb requires them (one apache-arrow), and
// each command still loads only the packages it needs. The worker's workflow bundle is
// built here too, by the Temporal bundler (dist/workflow-bundle.js): a
// worker run from dist/ loads it instead of running webpack at every start, which took
// seconds and left webpack's modules (~30 MB of strings and code) in the worker's heap,
// where every full garbage collection walked them (src/worker/create-worker.ts).
//
// `ensureBuilt()` is cheap when nothing changed (stats ~100 files, no esbuild load):
// dist/cli.stamp holds a digest of every source file's path, size and mtime, so an
// edited, added or deleted source (or a branch switch) rebuilds on the next start.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const DIST = path.join(root, 'dist');
export const CLI_JS = path.join(DIST, 'cli.js');
// A worker's dedup threads run this script (activities/dedup-threads.ts looks for it beside cli.js).
const THREAD_JS = path.join(DIST, 'dedup-thread.js');
const STAMP = path.join(DIST, 'cli.stamp');
export const WORKFLOW_BUNDLE_JS = path.join(DIST, 'workflow-bundle.js');
const SOURCE_DIRS = ['src', 'workflows', 'activities'];
const SOURCE_FILES = ['package.json', 'tsconfig.json', 'scripts/build.mjs'];

function listFiles(dir, out) {
  let entries;
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) listFiles(p, out);
    else out.push(p);
  }
}

/** Digest of the sources the build reads: path, size and mtime of each. */
export function sourceStamp() {
  const files = SOURCE_FILES.map((f) => path.join(root, f));
  for (const d of SOURCE_DIRS) listFiles(path.join(root, d), files);
  const h = createHash('sha256');
  for (const f of files.sort()) {
    const st = fs.statSync(f, { throwIfNoEntry: false });
    h.update(`${path.relative(root, f)}\0${st ? `${st.size}\0${st.mtimeMs}` : '-'}\n`);
  }
  return h.digest('hex');
}

function isFresh(stamp) {
  try {
    return fs.readFileSync(STAMP, 'utf8') === stamp && fs.existsSync(CLI_JS) && fs.existsSync(THREAD_JS) && fs.existsSync(WORKFLOW_BUNDLE_JS);
  } catch {
    return false;
  }
}

/** Writes `text` to `file` through a temp file and a rename, so a concurrent start never reads half a file. */
function writeAtomic(file, text) {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

/** The workflows and the stale-cache guard as the SDK's bundler packs them for a worker (same inputs as src/worker/create-worker.ts bundleWorkflows). */
async function buildWorkflowBundle() {
  const { bundleWorkflowCode } = await import('@temporalio/worker');
  const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error }; // as src/worker/create-worker.ts QUIET_BUNDLER_LOGGER
  const b = await bundleWorkflowCode({
    workflowsPath: path.join(root, 'workflows', 'index.ts'),
    workflowInterceptorModules: [path.join(root, 'workflows', 'stale-cache-guard.ts')],
    logger: quiet,
  });
  // The source map is inline in the code (the SDK no longer uses a separate one). Four
  // characters past Latin-1 (dashes and quotes in comments and messages) made V8 hold
  // the whole 2.6 MB bundle as a two-byte string, 5.2 MB in the worker and in each
  // workflow thread; as \u escapes (valid in strings, regular expressions and comments)
  // it is one byte per character.
  writeAtomic(WORKFLOW_BUNDLE_JS, b.code.replace(/[^\x00-\xff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
}

/** Builds dist/cli.js, dist/dedup-thread.js and the workflow bundle. The stamp is taken before reading, so a source edited meanwhile rebuilds next time. */
export async function build() {
  const stamp = sourceStamp();
  const esbuild = await import('esbuild');
  const r = await esbuild.build({
    entryPoints: { cli: path.join(root, 'src', 'cli', 'main.ts'), 'dedup-thread': path.join(root, 'activities', 'dedup-thread.ts') },
    outdir: DIST,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    packages: 'external',
    keepNames: true,
    // Linked map for `NODE_OPTIONS=--enable-source-maps`; off by default (it slows every start).
    sourcemap: 'linked',
    write: false,
    logLevel: 'silent',
  });
  fs.mkdirSync(DIST, { recursive: true });
  await buildWorkflowBundle();
  // Maps and the thread's script first: cli.js appearing is what a concurrent start waits for.
  const outputs = r.outputFiles.sort((a, b) => Number(a.path === CLI_JS) - Number(b.path === CLI_JS));
  for (const f of outputs) writeAtomic(f.path, f.contents);
  writeAtomic(STAMP, stamp);
}

/** Rebuilds dist/cli.js when any source changed since the last build; true when it built. */
export async function ensureBuilt() {
  if (isFresh(sourceStamp())) return false;
  await build();
  return true;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const t = Date.now();
  build().then(
    () => console.error(`built ${path.relative(root, CLI_JS)} in ${Date.now() - t} ms`),
    (e) => {
      console.error(`turnstile: build failed: ${e.message}`);
      process.exit(1);
    },
  );
}
