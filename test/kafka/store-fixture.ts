import { randomBytes } from 'node:crypto';
import { jsonLogger, type Store } from '../../src/index.js';
import { kafkaStore, type KafkaStoreOptions } from '../../src/brokers/kafka/index.js';
import { kafkaBrokers } from './fixture.js';

/** The largest request the test stores send: small, so that records and snapshots split often. */
export const TEST_MAX_MESSAGE_BYTES = 100_000;

const prefixes = new WeakMap<Store, string>();

/** A prefix no other test, and no other run, uses. */
export const uniquePrefix = (base: string): string => `${base}-${process.pid}-${randomBytes(4).toString('hex')}`;

/**
 * A Kafka store on the test broker (one replica), under `prefix`; one process takes every shard at `open()`
 * (`ownership: 'all'`) unless `options` says otherwise.
 */
export function testKafkaStore(prefix: string, options: Partial<KafkaStoreOptions> = {}): Store {
  const store = kafkaStore({
    brokers: [kafkaBrokers!],
    prefix,
    shards: 1,
    replicationFactor: 1,
    maxMessageBytes: TEST_MAX_MESSAGE_BYTES,
    ownership: 'all',
    logger: jsonLogger({ level: 'error' }),
    ...options,
  });
  prefixes.set(store, prefix);
  return store;
}

/** The prefix `store` was made with. */
export const prefixOf = (store: Store): string => prefixes.get(store)!;
