import { defineConfig } from 'vitest/config';
import SlowFirst from './test/slow-first.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    env: { SLUICE_LOG_LEVEL: 'silent' },
    testTimeout: 20_000,
    pool: 'forks',
    // Three files at once on two cores: most of the long files wait (on the broker, on child processes),
    // not compute; four starved the process scenarios' instances for seconds. SLUICE_TEST_WORKERS overrides.
    maxWorkers: Number(process.env.SLUICE_TEST_WORKERS ?? 3),
    sequence: { sequencer: SlowFirst },
    globalSetup: ['test/build-setup.ts', 'test/kafka/global-setup.ts'],
  },
});
