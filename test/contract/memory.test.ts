import { MemoryBroker } from '../../src/index.js';
import { brokerContract } from './broker-contract.js';
import { deadLetterContract } from './dead-letter-contract.js';

const shared = new MemoryBroker({ partitions: 1 });
brokerContract('memory', {
  connect: () => shared,
  createTopic: (name, partitions) => shared.createTopic(name, partitions),
});
deadLetterContract('memory', {
  connect: () => shared,
  createTopic: (name, partitions) => shared.createTopic(name, partitions),
});
