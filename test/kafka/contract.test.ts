import { afterAll, describe } from 'vitest';
import { brokerContract } from '../contract/broker-contract.js';
import { closeAll, kafkaBrokers, testKafka } from './fixture.js';

const admin = kafkaBrokers ? testKafka() : undefined;

describe.skipIf(!kafkaBrokers)('kafka', () => {
  afterAll(closeAll);
  brokerContract('kafka', {
    connect: () => testKafka(),
    createTopic: (name, partitions) => admin!.createTopic(name, partitions),
  });
});
