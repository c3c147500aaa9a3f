import { inject } from 'vitest';
import { silentLogger } from '../../src/index.js';
import { KafkaBroker } from '../../src/brokers/kafka/index.js';

/** The bootstrap address of the test broker, or undefined (with a reason) when there is none. */
export const kafkaBrokers = inject('kafkaBrokers');
export const kafkaSkipReason = inject('kafkaSkipReason');
if (!kafkaBrokers) console.warn(`skipping Kafka suites: ${kafkaSkipReason}`);

const made: KafkaBroker[] = [];

/** A Kafka client tuned for tests: quick fetches and heartbeats, nothing logged. */
export function testKafka(): KafkaBroker {
  const broker = new KafkaBroker({
    brokers: [kafkaBrokers!],
    clientId: 'sluice-test',
    logger: silentLogger,
    consumer: { maxWaitTimeMs: 100, heartbeatIntervalMs: 300, sessionTimeoutMs: 10_000, rebalanceTimeoutMs: 15_000, commitIntervalMs: 200 },
  });
  made.push(broker);
  return broker;
}

/** Closes every client the tests made. */
export async function closeAll(): Promise<void> {
  await Promise.all(made.splice(0).map((b) => b.close()));
}
