import { randomBytes } from 'node:crypto';
import { jsonLogger, type Store } from '../../src/index.js';
import { kafkaStore, type KafkaStoreOptions } from '../../src/brokers/kafka/index.js';
import { platformaticRuns } from './clients.js';
import { kafkaBrokers } from './fixture.js';

/** The largest request the test stores send: small, so that records and snapshots split often. */
export const TEST_MAX_MESSAGE_BYTES = 100_000;

const prefixes = new WeakMap<Store, string>();

/** A prefix no other test, and no other run, uses. */
export const uniquePrefix = (base: string): string => `${base}-${process.pid}-${randomBytes(4).toString('hex')}`;

/** The client a Kafka store runs on: `kafkaStore` (kafkajs) or `platformaticKafkaStore` (@platformatic/kafka). */
export type StoreClientName = 'kafkajs' | 'platformatic';

/** The store's clients that run here: kafkajs, and @platformatic/kafka where Node runs it. */
export const storeClients: readonly StoreClientName[] = [
  'kafkajs',
  ...(platformaticRuns ? ['platformatic' as const] : []),
];

const { platformaticKafkaStore } = platformaticRuns
  ? await import('../../src/brokers/platformatic/index.js')
  : { platformaticKafkaStore: undefined };

/** The store's factory on `client`: `kafkaStore` or `platformaticKafkaStore`. */
export const storeOn = (client: StoreClientName) => (options: KafkaStoreOptions) =>
  client === 'kafkajs' ? kafkaStore(options) : platformaticKafkaStore!(options);

/**
 * A Kafka store on the test broker (one replica), under `prefix`, on `client`; one process takes every shard at
 * `open()` (`ownership: 'all'`) unless `options` says otherwise.
 */
export function testKafkaStore(
  prefix: string,
  options: Partial<KafkaStoreOptions> = {},
  client: StoreClientName = 'kafkajs',
): Store {
  const store = storeOn(client)({
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
