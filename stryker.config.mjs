// Mutation testing of the core modules: `npm run mutate` (all of them) or `node scripts/mutate.mjs --changed`
// (only those changed since the last tag, bounded in time). See docs/testing.md.
export const CORE = [
  'src/dispatch/watermark.ts',
  'src/dispatch/workers.ts',
  'src/dispatch/ranked.ts',
  'src/shard/timer-wheel.ts',
  'src/shard/parked-table.ts',
  'src/shard/parked-keys.ts',
  'src/pace/rules.ts',
  'src/declare/parse.ts',
  'src/declare/pace.ts',
  'src/declare/checks.ts',
  'src/store/frame.ts',
];

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutate.config.ts' },
  plugins: ['@stryker-mutator/vitest-runner'],
  mutate: CORE,
  coverageAnalysis: 'perTest',
  reporters: ['clear-text', 'progress', 'json', 'html'],
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  concurrency: 2,
  timeoutMS: 10_000,
  // The first pass runs the whole mutation suite once; on a loaded machine it takes longer than the 5 min default.
  dryRunTimeoutMinutes: 40,
  thresholds: { high: 90, low: 80, break: null },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
