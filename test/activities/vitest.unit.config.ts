import { defineConfig } from 'vitest/config';

// Storage and activity tests only: real files and real Lance tables in temp folders,
// activities under MockActivityEnvironment. No Temporal server, so no globalSetup.
// Run from the project root: npx vitest run --config test/activities/vitest.unit.config.ts
export default defineConfig({
  test: {
    include: ['test/activities/**/*.test.ts', 'test/storage/**/*.test.ts', 'test/client/**/*.test.ts'],
    // Needs the SeaweedFS of the full suite's globalSetup.
    exclude: ['test/storage/s3-storage.test.ts'],
    testTimeout: 60_000,
    pool: 'forks',
  },
});
