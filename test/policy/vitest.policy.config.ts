import { defineConfig } from 'vitest/config';

// The pure policy core and the simulator: no Temporal server, so no globalSetup.
// npx vitest run --config test/policy/vitest.policy.config.ts test/policy
export default defineConfig({
  test: {
    include: ['test/policy/**/*.test.ts'],
    testTimeout: 120_000,
  },
});
