import { MemoryBroker } from '../../src/index.js';
import { brokerContract } from './broker-contract.js';

const shared = new MemoryBroker({ partitions: 1 });
brokerContract('memory', {
  connect: () => shared,
  createTopic: (name, partitions) => shared.createTopic(name, partitions),
});
