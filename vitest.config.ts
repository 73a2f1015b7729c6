import { defineConfig } from 'vitest/config';

// Integration tests share one Temporal dev server started in globalSetup; each test
// uses its own task queue and workflow ids, so files may run in parallel.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 120_000,
    // Worker processes the tests start share task queues with the harness's in-process
    // workers, which are unversioned; the upgrade tests turn versioning on for theirs.
    env: { TURNSTILE_DEPLOYMENT: 'off' },
    hookTimeout: 120_000,
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
});
