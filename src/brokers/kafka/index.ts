/**
 * `sluice/kafka`: the Kafka broker, {@link KafkaBroker}. The only entry point of Sluice that loads kafkajs
 * (2.2.4; ./kafkajs.ts loads it), an optional peer dependency: install it beside Sluice; without it, this
 * import fails with `DEPENDENCY_MISSING`. Import it only where an app talks to Kafka. The repository's
 * `docs/kafka.md` tells how it reads, commits and rebalances.
 *
 * @example
 * ```ts
 * import { App, subscriber } from 'sluice';
 * import { KafkaBroker } from 'sluice/kafka';
 *
 * const kafka = new KafkaBroker({ brokers: ['127.0.0.1:9092'] });
 * const app = new App({ name: 'billing' }).withBroker(kafka, (b) => b.include(subscriber('orders',
 * bill).workers(16).build()));
 * await app.run();
 * ```
 *
 * @module sluice/kafka
 */
export { KafkaBroker } from './kafka-broker.js';
export type { KafkaBrokerOptions, KafkaConsumerSettings } from './options.js';
export { kafkaStore, type KafkaStoreOptions } from './store/kafkajs-store.js';
export type { KafkaStoreSettings } from './store/kafka-store.js';
