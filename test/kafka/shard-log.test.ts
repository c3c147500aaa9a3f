import { afterAll, describe } from 'vitest';
import type { Store } from '../../src/index.js';
import { Kafka, logLevel } from '../../src/brokers/kafka/kafkajs.js';
import { shardLogContract } from '../contract/shard-log-contract.js';
import { createTopics, kafkaBrokers, readCommitted } from './fixture.js';
import { TEST_MAX_MESSAGE_BYTES, prefixOf, storeClients, testKafkaStore, uniquePrefix } from './store-fixture.js';

const fencers: Store[] = [];
/** What a record's message holds at most: the request's size less the store's room for headers. */
const room = TEST_MAX_MESSAGE_BYTES - 1024 - 17;
/** The published topics' limit on a batch of messages. */
const OUTPUT_LIMIT = { name: 'max.message.bytes', value: '20000' };

describe.skipIf(!kafkaBrokers).each(storeClients)('kafka store on %s', (client) => {
  const kafka = new Kafka({ clientId: 'sluice-test', brokers: [kafkaBrokers!], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  afterAll(async () => {
    await Promise.allSettled(fencers.map((s) => s.close()));
    await admin.disconnect();
  });
  shardLogContract('kafka', {
    fresh: () => testKafkaStore(uniquePrefix('log-contract'), {}, client),
    again: (store) => testKafkaStore(prefixOf(store), {}, client),
    sizes: [room - 1, room, room + 1, 2 * room, 10 * room + 1],
    // Another owner opens the shard: its producer fences this one's.
    breakWrites: async (store) => {
      const fencer = testKafkaStore(prefixOf(store), {}, client);
      fencers.push(fencer);
      await fencer.open();
    },
    timeoutMs: 120_000,
    publishing: {
      topic: async () => {
        const topic = uniquePrefix('log-published');
        await admin.connect();
        await createTopics(admin, [{ topic, numPartitions: 1, replicationFactor: 1, configEntries: [OUTPUT_LIMIT] }]);
        return topic;
      },
      read: (topic) => readCommitted(kafka, admin, topic, 1),
      refused: { value: 'x'.repeat(2 * Number(OUTPUT_LIMIT.value)) }, // over the topic's max.message.bytes
    },
  });
});
