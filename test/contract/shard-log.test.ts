import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MemoryBroker, fileStore, memoryStore, type MemoryStore, type Store } from '../../src/index.js';
import { shardLogContract } from './shard-log-contract.js';

shardLogContract('memory', {
  fresh: () => memoryStore({ shards: 1 }),
  again: (store) => (store as MemoryStore).crash(), // what was durable: all of it, once closed
});

const broker = new MemoryBroker();
let topics = 0;
shardLogContract('memory, publishing to a memory broker', {
  fresh: () => memoryStore({ shards: 1, publishesTo: broker }),
  again: (store) => (store as MemoryStore).crash(),
  publishing: {
    topic: async () => `published-${++topics}`,
    read: async (topic) => broker.values(topic),
    refused: { value: { n: 'bad' }, options: { partition: 99 } }, // the memory broker has 1 partition
  },
});

const dirs = new WeakMap<Store, string>();
const onDisk = (dir: string): Store => {
  const store = fileStore({ dir, shards: 1, segmentBytes: 1 << 20, onFatal: () => {} });
  dirs.set(store, dir);
  return store;
};
shardLogContract('file', {
  fresh: () => onDisk(mkdtempSync(path.join(os.tmpdir(), 'sluice-log-contract-'))),
  again: (store) => onDisk(dirs.get(store)!),
  sizes: [(1 << 20) - 32, (1 << 20) - 16, (1 << 20) - 15], // about a segment: a record never spans two
  breakWrites: async (store) => {
    const log = store.log(0) as unknown as { handle: { close(): Promise<void> } };
    await log.handle.close(); // the next write fails
  },
});
