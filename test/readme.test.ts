import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { defaultPolicy } from '../src/config/policy-schema';
import { ENV_KEYS } from '../src/config/config-schema';

// The README is the operator's reference: every policy key and environment variable
// must be in it, with the default the schema actually applies.
const readme = fs.readFileSync(path.resolve(__dirname, '..', 'README.md'), 'utf8');

test('every policy key is documented with its schema default', () => {
  for (const [key, value] of Object.entries(defaultPolicy())) {
    const def = typeof value === 'object' ? Object.entries(value as object).map(([k, v]) => `${k} ${v}`).join(', ') : String(value);
    expect(readme, key).toContain(`| \`${key}\` | ${def} |`);
  }
});

test('every environment variable is documented', () => {
  for (const name of Object.keys(ENV_KEYS)) expect(readme).toContain(`\`${name}\``);
});
