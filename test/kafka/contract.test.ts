import { afterAll, describe } from 'vitest';
import { brokerContract } from '../contract/broker-contract.js';
import { deadLetterContract } from '../contract/dead-letter-contract.js';
import { closeAll, kafkaBrokers, testKafka } from './fixture.js';

const admin = kafkaBrokers ? testKafka() : undefined;

describe.skipIf(!kafkaBrokers)('kafka', () => {
  afterAll(closeAll);
  const fixture = {
    connect: () => testKafka(),
    createTopic: (name: string, partitions: number) => admin!.createTopic(name, partitions),
  };
  brokerContract('kafka', fixture);
  deadLetterContract('kafka', fixture);
});
