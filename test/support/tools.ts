import fs from 'node:fs';
import { beforeEach } from 'vitest';

// Tests that need a tool from outside npm (a Prometheus server, a browser) find it here.
// On a developer machine without it they skip with one line saying how to install it;
// in CI (.ci/run sets TURNSTILE_REQUIRE_TOOLS=1 and installs them) a missing tool fails.

export interface Tool {
  name: string;
  /** Absolute paths tried in order. */
  paths: string[];
  install: string;
}

export const PROMETHEUS: Tool = { name: 'prometheus', paths: ['/usr/bin/prometheus', '/usr/local/bin/prometheus'], install: 'apt-get install -y prometheus' };
export const POSTGRES: Tool = { name: 'postgresql-15', paths: ['/usr/lib/postgresql/15/bin/postgres'], install: 'apt-get install -y postgresql-15' };
export const CHROMIUM: Tool = { name: 'chromium', paths: ['/usr/bin/chromium', '/usr/bin/chromium-browser'], install: 'apt-get install -y chromium' };

/** The tool's path, or the one-line reason to skip (throws instead when tools are required). */
export function findTool(tool: Tool): { path: string } | { skip: string } {
  const found = tool.paths.find((p) => fs.existsSync(p));
  if (found) return { path: found };
  const why = `${tool.name} not found (${tool.paths.join(', ')}): skipped; install it with \`${tool.install}\``;
  if (process.env.TURNSTILE_REQUIRE_TOOLS === '1') throw new Error(`TURNSTILE_REQUIRE_TOOLS=1: ${why}`);
  return { skip: why };
}

/**
 * Inside a describe: skips each of its tests when the tool is missing, with the reason
 * beside the test's name in the report (describe.skipIf would skip them silently).
 */
export function skipWithout(found: { path: string } | { skip: string }): void {
  beforeEach((ctx) => {
    if ('skip' in found) ctx.skip(found.skip);
  });
}
