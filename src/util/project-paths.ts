import fs from 'node:fs';
import path from 'node:path';

// Absolute paths inside the project, independent of the current directory and of
// whether this runs from the TypeScript sources (src/) or the compiled CLI (dist/):
// the project root is the nearest directory above this file holding package.json.
function projectRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) return path.resolve(from, '..');
  }
}

export const PROJECT_ROOT = projectRoot(__dirname);
export const WORKFLOWS_PATH = path.join(PROJECT_ROOT, 'workflows', 'index.ts');
/** The workflow interceptor that drops stale cached runs (workflows/stale-cache-guard.ts). */
export const STALE_CACHE_GUARD_PATH = path.join(PROJECT_ROOT, 'workflows', 'stale-cache-guard.ts');
