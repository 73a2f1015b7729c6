import fs from 'node:fs';
import path from 'node:path';

// The workflow bundles `turnstile dev` ran, one file per build id under its data folder.
// After a `git pull` the next start runs the new release, and the table runs pinned to
// the previous one need that one's workflow code until they have moved on: dev starts a
// worker of each kept bundle that still has runs, and deletes a bundle once it has none.

export const keptBundlesDir = (dataDir: string): string => path.join(dataDir, 'workflow-bundles');

/** Keeps `code` as the bundle of `buildId` (written once; a half-written file is never visible). */
export function keepBundle(dataDir: string, buildId: string, code: string): string {
  const dir = keptBundlesDir(dataDir);
  const file = path.join(dir, `${buildId}.js`);
  if (fs.existsSync(file)) return file;
  fs.mkdirSync(dir, { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, code);
  fs.renameSync(tmp, file);
  return file;
}

export function keptBundles(dataDir: string): { buildId: string; file: string }[] {
  const dir = keptBundlesDir(dataDir);
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.js'))
    .map((f) => ({ buildId: f.slice(0, -3), file: path.join(dir, f) }));
}

export function dropKeptBundle(dataDir: string, buildId: string): void {
  fs.rmSync(path.join(keptBundlesDir(dataDir), `${buildId}.js`), { force: true });
}
