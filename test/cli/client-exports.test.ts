import { expect, test } from 'vitest';
import { clientEnv, exportLines } from '../../src/cli/client-exports';
import { loadConfig } from '../../src/config/config-schema';

// What `dev --storage s3` tells a second terminal to export: lines a shell takes as they
// are, naming the namespace and task queue only when they are not the defaults.

const configOf = (env: Record<string, string>) => {
  const r = loadConfig(env, undefined);
  if (!r.ok) throw new Error(r.error);
  return r.config;
};

test('the server and root always, the namespace and task queue only when not the defaults, the S3 settings last', () => {
  const s3 = { AWS_ENDPOINT_URL: 'http://127.0.0.1:8333', AWS_ACCESS_KEY_ID: 'turnstile' };
  expect(exportLines(clientEnv(configOf({ TEMPORAL_ADDRESS: '127.0.0.1:7233', TURNSTILE_DATA: 's3://turnstile/data' }), s3))).toEqual([
    'export TEMPORAL_ADDRESS=127.0.0.1:7233',
    'export TURNSTILE_DATA=s3://turnstile/data',
    'export AWS_ENDPOINT_URL=http://127.0.0.1:8333',
    'export AWS_ACCESS_KEY_ID=turnstile',
  ]);
  expect(Object.keys(clientEnv(configOf({ TEMPORAL_NAMESPACE: 'ns', TURNSTILE_TASK_QUEUE: 'q' })))).toEqual(['TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'TURNSTILE_TASK_QUEUE', 'TURNSTILE_DATA']);
});

test('values a shell would split or expand are single-quoted', () => {
  expect(exportLines({ TURNSTILE_DATA: "/home/me/my data/it's", AWS_SECRET_ACCESS_KEY: 'a$b' })).toEqual([`export TURNSTILE_DATA='/home/me/my data/it'\\''s'`, `export AWS_SECRET_ACCESS_KEY='a$b'`]);
});
