import { afterAll, describe } from 'vitest';
import type { Store } from '../../src/index.js';
import { shardLogContract } from '../contract/shard-log-contract.js';
import { kafkaBrokers } from './fixture.js';
import { TEST_MAX_MESSAGE_BYTES, prefixOf, testKafkaStore, uniquePrefix } from './store-fixture.js';

const fencers: Store[] = [];
/** What a record's message holds at most: the request's size less the store's room for headers. */
const room = TEST_MAX_MESSAGE_BYTES - 1024 - 17;

describe.skipIf(!kafkaBrokers)('kafka', () => {
  afterAll(async () => {
    await Promise.allSettled(fencers.map((s) => s.close()));
  });
  shardLogContract('kafka', {
    fresh: () => testKafkaStore(uniquePrefix('log-contract')),
    again: (store) => testKafkaStore(prefixOf(store)),
    sizes: [room - 1, room, room + 1, 2 * room, 10 * room + 1],
    // Another owner opens the shard: its producer fences this one's.
    breakWrites: async (store) => {
      const fencer = testKafkaStore(prefixOf(store));
      fencers.push(fencer);
      await fencer.open();
    },
    timeoutMs: 120_000,
  });
});
