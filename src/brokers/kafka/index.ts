/**
 * `sluice/kafka`: the Kafka broker, {@link KafkaBroker}. The only module of Sluice that loads kafkajs
 * (2.2.4); import it only where an app talks to Kafka. The repository's `docs/kafka.md` tells how it
 * reads, commits and rebalances.
 *
 * @example
 * ```ts
 * import { App, subscriber } from 'sluice';
 * import { KafkaBroker } from 'sluice/kafka';
 *
 * const kafka = new KafkaBroker({ brokers: ['127.0.0.1:9092'] });
 * const app = new App({ name: 'billing' }).withBroker(kafka, (b) => b.include(subscriber('orders', bill).workers(16).build()));
 * await app.run();
 * ```
 *
 * @module sluice/kafka
 */
export { KafkaBroker, type KafkaBrokerOptions } from './kafka-broker.js';
export type { KafkaConsumerSettings } from './kafka-consumer.js';
