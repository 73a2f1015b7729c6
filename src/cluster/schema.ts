import fs from 'node:fs';
import path from 'node:path';
import { runToEnd } from './processes';

// The Temporal schemas, created and upgraded with the server's own tool (temporal-sql-tool,
// cmd/tools/sql) from the versioned schema files of the same module version. Done once
// per data directory: a marker file records it.

const DATABASES = [
  { db: 'temporal', versioned: 'temporal/versioned' },
  { db: 'temporal_visibility', versioned: 'visibility/versioned' },
];

export function setupSchemas(opts: { sqlTool: string; schemaDir: string; pgPort: number; dir: string; log: string }): void {
  const marker = path.join(opts.dir, 'schema.done');
  if (fs.existsSync(marker)) return;
  for (const { db, versioned } of DATABASES) {
    const base = ['--plugin', 'postgres12', '--ep', '127.0.0.1', '-p', String(opts.pgPort), '-u', 'temporal', '--db', db];
    const run = (...args: string[]) => runToEnd({ cmd: opts.sqlTool, args: [...base, ...args], log: opts.log });
    run('create-database');
    run('setup-schema', '-v', '0.0');
    run('update-schema', '-d', path.join(opts.schemaDir, versioned));
  }
  fs.writeFileSync(marker, new Date().toISOString() + '\n');
}
