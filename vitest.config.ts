import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    env: { SLUICE_LOG_LEVEL: 'silent' },
    testTimeout: 20_000,
    pool: 'forks',
    globalSetup: ['test/build-setup.ts', 'test/kafka/global-setup.ts'],
  },
});
