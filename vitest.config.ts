import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two test files at a time (the default on 2 cores is one): CI stays well under its 5 minutes.
    maxWorkers: 2,
  },
});
