import { execFile } from 'node:child_process';
import fs from 'node:fs';

// The dev server's SQLite file belongs to the server version that created it.

/** `server --version` of a Temporal server binary, e.g. "1.32.1". */
export function serverVersion(binary: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(binary, ['--version'], { timeout: 60_000 }, (err, stdout) => {
      if (err) return reject(new Error(`${binary} --version failed: ${err.message.split('\n')[0]}`));
      resolve(stdout.trim().replace(/^.*version\s+/i, ''));
    });
  });
}

/**
 * The server creates a fresh SQLite file's schema itself (setup=true) but never upgrades
 * an existing one: a database another server version wrote (the Temporal CLI's
 * start-dev, which ran the dev server before, embedded server 1.29.1) would lack the
 * newer tables and fail later, mid-run. So the version that created the file is
 * recorded beside it, and any other is refused at once, saying what to do.
 */
export function checkDatabaseVersion(dbFile: string, marker: string, version: string): void {
  if (!fs.existsSync(dbFile)) {
    // Recorded before the server creates it: a start cut short is still ours next time.
    fs.writeFileSync(marker, `${version}\n`);
    return;
  }
  const recorded = fs.existsSync(marker) ? fs.readFileSync(marker, 'utf8').trim() : null;
  if (recorded === version) return;
  throw new Error(
    `${dbFile} was written by ${recorded ? `Temporal server ${recorded}` : 'another Temporal server (the Temporal CLI\'s start-dev, say)'}, ` +
      `and server ${version} does not upgrade a SQLite database in place: move it away (its workflows are lost) or use another data directory`,
  );
}
