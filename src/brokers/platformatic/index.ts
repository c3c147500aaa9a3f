/**
 * `sluice/kafka/platformatic`: Kafka through @platformatic/kafka, {@link PlatformaticKafkaBroker}. The only
 * entry point that loads @platformatic/kafka (an optional peer dependency, ESM only, Node.js 22.22 or 24.6 and
 * later): importing it without the package, or on an older Node, fails with `DEPENDENCY_MISSING` or
 * `RUNTIME_UNSUPPORTED`. The repository's `docs/kafka.md` tells which client to choose.
 *
 * @example
 * ```ts
 * import { App, subscriber } from 'sluice';
 * import { PlatformaticKafkaBroker } from 'sluice/kafka/platformatic';
 *
 * const kafka = new PlatformaticKafkaBroker({ brokers: ['127.0.0.1:9092'], groupProtocol: 'consumer' });
 * const app = new App({ name: 'billing' }).withBroker(kafka, (b) => b.include(subscriber('orders', bill).build()));
 * await app.run();
 * ```
 *
 * @module sluice/kafka/platformatic
 */
export { PlatformaticKafkaBroker } from './broker.js';
export type { PlatformaticKafkaBrokerOptions } from './settings.js';
export { platformaticKafkaStore, type PlatformaticKafkaStoreOptions } from './store.js';
