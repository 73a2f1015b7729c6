#!/usr/bin/env node
// The `turnstile` command: runs the TypeScript CLI through tsx (no build step).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const child = spawn(path.join(root, 'node_modules', '.bin', 'tsx'), [path.join(root, 'src', 'cli', 'main.ts'), ...process.argv.slice(2)], {
  stdio: 'inherit',
});
// Ctrl-C reaches the whole foreground process group, the child included: sending it a
// second SIGINT would cut its orderly shutdown short. Other signals are passed on.
process.on('SIGINT', () => {});
for (const sig of ['SIGTERM', 'SIGHUP']) process.on(sig, () => child.kill(sig));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
