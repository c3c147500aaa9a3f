/**
 * The one-way direction of imports, room by room (docs/architecture.md draws them):
 *   core <- declare, shard <- dispatch, pace <- pace-stage <- pipeline <- telemetry <- app;
 *   store (the log backends) and brokers import core only, and are handed to the app.
 * Brokers and testing depend on core only; only declare/ uses reflect-metadata; only brokers/kafka/ uses kafkajs,
 * and only brokers/kafka/kafkajs.ts loads it at run time (an optional peer dependency: nothing the entry points
 * other than sluice/kafka, src/index.ts, src/testing.ts and src/adapter.ts, reach may load it or the Kafka broker);
 * only src/telemetry/tracing/tracing.ts loads @opentelemetry/api (an optional peer dependency, by a dynamic import).
 * `npm test` fails on any cycle or any import against these arrows.
 */
const layer = (name, mayImport) => ({
  name: `${name}-imports-only-${mayImport.join('-')}`,
  severity: 'error',
  from: { path: `^src/${name}/` },
  to: { path: '^src/', pathNot: [`^src/${name}/`, ...mayImport.map((m) => `^src/${m}/`)] },
});

module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', from: {}, to: { circular: true } },
    layer('core', []),
    layer('declare', ['core']),
    layer('shard', ['core']),
    layer('dispatch', ['core', 'declare', 'shard']),
    layer('pace', ['core', 'declare', 'shard']),
    // The log backends: records in, records out; what a record means is the pace stage's.
    layer('store', ['core']),
    layer('brokers', ['core']),
    layer('testing', ['core']),
    // The pace stage never imports the delivery pipeline: runs leave it through a target the pipeline hands in.
    layer('pace-stage', ['core', 'declare', 'shard', 'pace', 'store']),
    // The pipeline never imports telemetry: it tells what happened through the events of delivery-events.ts.
    layer('pipeline', ['core', 'declare', 'shard', 'dispatch', 'pace', 'pace-stage']),
    layer('telemetry', ['core', 'declare', 'shard', 'dispatch', 'pace', 'pace-stage', 'pipeline']),
    layer('app', ['core', 'declare', 'shard', 'dispatch', 'pace', 'store', 'pace-stage', 'pipeline', 'telemetry']),
    {
      name: 'reflect-metadata-only-in-declare',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(declare/|index\\.ts)' },
      to: { path: 'reflect-metadata' },
    },
    {
      name: 'kafkajs-only-in-brokers-kafka',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/brokers/kafka/' },
      to: { path: 'kafkajs' },
    },
    {
      name: 'kafkajs-loaded-by-kafkajs-ts-only',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/brokers/kafka/kafkajs\\.ts$' },
      to: { path: '(^|/)node_modules/kafkajs/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'platformatic-only-in-brokers-platformatic',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/brokers/platformatic/' },
      to: { path: '@platformatic/kafka' },
    },
    {
      name: 'platformatic-loaded-by-platformatic-ts-only',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/brokers/platformatic/platformatic\\.ts$' },
      to: { path: '(^|/)node_modules/@platformatic/kafka/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'platformatic-never-reaches-kafkajs',
      severity: 'error',
      from: { path: '^src/brokers/platformatic/' },
      // Types of the kafkajs adapter's settings are shared; kafkajs itself is loaded by kafkajs.ts alone.
      to: { path: '^src/brokers/kafka/kafkajs\\.ts$', reachable: true },
    },
    {
      name: 'opentelemetry-loaded-by-tracing-ts-only',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/telemetry/tracing/tracing\\.ts$' },
      to: { path: '(^|/)node_modules/@opentelemetry/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'main-entry-never-reaches-kafka',
      severity: 'error',
      from: { path: '^src/(index|testing|adapter)\\.ts$' },
      to: {
        path: ['^src/brokers/(kafka|platformatic)/', '(^|/)node_modules/(kafkajs|@platformatic)/'],
        reachable: true,
      },
    },
    { name: 'no-tests-from-src', severity: 'error', from: { path: '^src/' }, to: { path: '^(test|bench|examples)/' } },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.test\\.ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
