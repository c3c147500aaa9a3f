// Sluice: App + KafkaBroker from the repository's dist/ (the harness builds it first). workers(n) for the
// unordered workloads, workersByKey(n) when per-key order is required (keyed by the Kafka message key).
import 'reflect-metadata';
import { App, silentLogger, subscriber } from '../../../dist/index.js';
import { KafkaBroker } from '../../../dist/brokers/kafka/index.js';
import { ready, report, sleep, spec, tracker } from './common.mjs';

const t = tracker();
const broker = new KafkaBroker({
  brokers: spec.brokers,
  clientId: 'peer-sluice',
  logger: silentLogger,
  consumer: { maxWaitTimeMs: 100 },
});
const handle = spec.sleepMs > 0 ? () => sleep(spec.sleepMs) : async () => {};
const sub = subscriber(spec.topic, async (value) => {
  const v = t.begin(value); // decoded by Sluice (JSON)
  await handle(v);
  t.end(v);
});
const app = new App({ name: spec.group, logger: silentLogger }).withBroker(broker, (b) =>
  b.include((spec.ordered ? sub.workersByKey(spec.concurrency) : sub.workers(spec.concurrency)).build()),
);
await app.start();
ready();
await t.done;
await app.stop();
await report(t.result({ system: 'sluice' }));
process.exit(0);
