/**
 * The suite that mutation testing (`npm run mutate`) runs against each mutant: every unit and memory-broker
 * test, without the ones that need a Kafka broker, spawn crash children on the compiled package, run the
 * long simulation or measure at scale (`*-scale.test.ts`) — each mutant is judged by assertions that run in seconds.
 */
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/kafka/**', 'test/sim/**', 'test/**/*crash*.test.ts', 'test/examples.test.ts', 'test/standard-decorators.test.ts', 'test/**/*-scale.test.ts', '**/node_modules/**'],
    env: { SLUICE_LOG_LEVEL: 'silent' },
    testTimeout: 20_000,
    pool: 'forks',
  },
});
