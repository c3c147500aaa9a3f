/** `sluice/kafka`: the Kafka broker. The only module that loads kafkajs. */
export { KafkaBroker, type KafkaBrokerOptions } from './kafka-broker.js';
export type { KafkaConsumerSettings } from './kafka-consumer.js';
