/**
 * The suite that mutation testing (`npm run mutate`) runs against each mutant: every unit and memory-broker
 * test, without the ones that need a Kafka broker, spawn crash children on the compiled package or race
 * processes for the store's lock, run the long simulation or measure at scale (`*-scale.test.ts`) — each
 * mutant is judged by assertions that run in seconds.
 */
import { readFileSync } from 'node:fs';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Unit suites first: a file that tests modules directly (it imports no `src/index.js`) runs before the files
 * that test through the public API. Stryker ends a mutant's run at its first failed test, so a mutant that
 * stalls a core module fails a unit test's bounded assertion before a test of the whole app waits on work
 * that never finishes (a hang, which counts only as a timeout). Otherwise vitest's own order.
 */
class UnitSuitesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const unit = (spec: TestSpecification) => !readFileSync(spec.moduleId, 'utf8').includes("/src/index.js'");
    return [...sorted.filter(unit), ...sorted.filter((spec) => !unit(spec))];
  }
}

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: [
      'test/kafka/**',
      'test/sim/**',
      'test/**/*crash*.test.ts',
      'test/store/lock.test.ts', // 100 processes opening a store at once: minutes on a loaded machine
      'test/project/examples.test.ts',
      'test/declare/standard-decorators.test.ts',
      'test/**/*-scale.test.ts',
      '**/node_modules/**',
    ],
    env: { SLUICE_LOG_LEVEL: 'silent' },
    testTimeout: 20_000,
    setupFiles: ['test/mutate-setup.ts'],
    pool: 'forks',
    sequence: { sequencer: UnitSuitesFirst },
  },
});
