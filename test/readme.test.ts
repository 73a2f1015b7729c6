import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { defaultPolicy, POLICY_DOCS } from '../src/config/policy-schema';
import { ENV_KEYS, loadConfig } from '../src/config/config-schema';

// The README is the operator's reference: every process key and environment variable
// must be in it, with the default the schema actually applies. The policy keys are in
// docs/configuration.md, with the same strictness.
const readme = fs.readFileSync(path.resolve(__dirname, '..', 'README.md'), 'utf8');
const configurationDoc = fs.readFileSync(path.resolve(__dirname, '..', 'docs', 'configuration.md'), 'utf8');

test('every policy key is documented with its schema default and its description', () => {
  for (const [key, value] of Object.entries(defaultPolicy())) {
    const def = typeof value === 'object' ? Object.entries(value as object).map(([k, v]) => `${k} ${v}`).join(', ') : String(value);
    expect(configurationDoc, key).toContain(`| \`${key}\` | ${def} | ${POLICY_DOCS[key as keyof typeof POLICY_DOCS]} |`);
  }
});

test('every environment variable is documented', () => {
  for (const name of Object.keys(ENV_KEYS)) expect(readme).toContain(`\`${name}\``);
});

test('every process key (temporal.*, dataRoot, worker.*) is documented with its schema default', () => {
  const r = loadConfig({}, undefined);
  if (!r.ok) throw new Error(r.error);
  const { policy: _policy, ...rest } = r.config;
  const keys: [string, unknown][] = [];
  for (const [k, v] of Object.entries(rest)) {
    if (v && typeof v === 'object') for (const [k2, v2] of Object.entries(v)) keys.push([`${k}.${k2}`, v2]);
    else keys.push([k, v]);
  }
  expect(keys.length).toBeGreaterThanOrEqual(7);
  for (const [key, def] of keys) expect(readme, key).toMatch(new RegExp(`\\| \`${key.replace('.', '\\.')}\` \\|[^|\\n]*\\| \`?${String(def).replace(/\./g, '\\.')}\`? \\|`));
});
