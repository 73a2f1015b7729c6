#!/usr/bin/env node
// The `turnstile` command: runs the compiled CLI (dist/cli.js) in this process, first
// rebuilding it when a source changed (scripts/build.mjs; a cheap check when nothing
// did). For development without a build: `npm run turnstile:tsx -- <command>`.
import { createRequire } from 'node:module';
import { CLI_JS, ensureBuilt } from './build.mjs';

try {
  await ensureBuilt();
} catch (e) {
  console.error(`turnstile: build of ${CLI_JS} failed: ${e.message.split('\n')[0]}`);
  process.exit(1);
}
createRequire(import.meta.url)(CLI_JS);
