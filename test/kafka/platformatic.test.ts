import { afterAll, describe } from 'vitest';
import type { PlatformaticKafkaBroker } from '../../src/brokers/platformatic/index.js';
import { nodeRuns } from '../../src/brokers/platformatic/platformatic.js';
import { jsonLogger } from '../../src/index.js';
import { brokerContract } from '../contract/broker-contract.js';
import { deadLetterContract } from '../contract/dead-letter-contract.js';
import { kafkaBrokers } from './fixture.js';

/** @platformatic/kafka runs on Node.js 22.22 / 24.6 and later: on Node 20 this suite is skipped (see docs/kafka.md). */
const runs = nodeRuns(process.versions.node);
const { PlatformaticKafkaBroker: Broker } = runs
  ? await import('../../src/brokers/platformatic/index.js')
  : { PlatformaticKafkaBroker: undefined };

const made: PlatformaticKafkaBroker[] = [];
/** A client tuned for tests, as test/kafka/fixture.ts's `testKafka` is. */
export function testPlatformatic(groupProtocol: 'classic' | 'consumer'): PlatformaticKafkaBroker {
  const broker = new Broker!({
    brokers: [kafkaBrokers!],
    clientId: 'sluice-test',
    groupProtocol,
    logger: jsonLogger({ level: 'error' }),
    consumer: {
      maxWaitTimeMs: 100,
      heartbeatIntervalMs: 300,
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 15_000,
      commitIntervalMs: 200,
    },
  });
  made.push(broker);
  return broker;
}

for (const protocol of ['classic', 'consumer'] as const) {
  describe.skipIf(!kafkaBrokers || !runs)(`kafka on @platformatic/kafka, ${protocol} group protocol`, () => {
    const admin = kafkaBrokers && runs ? testPlatformatic(protocol) : undefined;
    afterAll(async () => {
      await Promise.all(made.splice(0).map((b) => b.close()));
    });
    const fixture = {
      connect: () => testPlatformatic(protocol),
      createTopic: (name: string, partitions: number) => admin!.createTopic(name, partitions),
    };
    brokerContract(`platformatic ${protocol}`, fixture);
    deadLetterContract(`platformatic ${protocol}`, fixture);
  });
}
