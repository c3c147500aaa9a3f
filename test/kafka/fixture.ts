import type { Admin, Consumer, ITopicConfig } from 'kafkajs';
import { inject } from 'vitest';
import { jsonLogger, silentLogger } from '../../src/index.js';
import { KafkaBroker, type KafkaBrokerOptions } from '../../src/brokers/kafka/index.js';
import { askAgain } from '../../src/brokers/kafka/catching-up.js';
import { SESSION_CLOCK } from '../../src/brokers/kafka/consumer/batch-reader.js';
import { Partitioners, READ_UNCOMMITTED, kafkajsInternals, type Kafka } from '../../src/brokers/kafka/kafkajs.js';
import { readPartition } from '../../src/brokers/kafka/store/partition-reader.js';

/** The bootstrap address of the test broker, or undefined (with a reason) when there is none. */
export const kafkaBrokers = inject('kafkaBrokers');
export const kafkaSkipReason = inject('kafkaSkipReason');
if (!kafkaBrokers) console.warn(`skipping Kafka suites: ${kafkaSkipReason}`);

const made: KafkaBroker[] = [];

/**
 * A Kafka client tuned for tests: quick fetches and heartbeats. Only its errors are logged (to stderr): a
 * consumer crash, a refused commit, kafkajs's own errors — what a failing Kafka test needs to be read.
 */
export function testKafka(extra: Partial<KafkaBrokerOptions> = {}): KafkaBroker {
  const broker = new KafkaBroker({
    ...extra,
    brokers: [kafkaBrokers!],
    clientId: 'sluice-test',
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

/**
 * Creates `topics` with kafkajs's admin client and resolves once the broker serves them, every partition led.
 * kafkajs's own wait for leaders gives up when the broker answers UNKNOWN_TOPIC_OR_PARTITION, as a loaded one
 * does for a moment after the creation; asked again, it is told the topics exist and waits for nothing. So the
 * creation is asked again while the broker catches up, then the metadata (which kafkajs refuses while a
 * partition has no leader), as `KafkaBroker` does before it publishes.
 */
export async function createTopics(admin: Admin, topics: ITopicConfig[]): Promise<void> {
  await askAgain(() => admin.createTopics({ waitForLeaders: true, topics }), SESSION_CLOCK);
  await askAgain(() => admin.fetchTopicMetadata({ topics: topics.map((t) => t.topic) }), SESSION_CLOCK);
}

/** Closes every client the tests made. */
export async function closeAll(): Promise<void> {
  await Promise.all(made.splice(0).map((b) => b.close()));
}

/** Lets `touch` see (and change) every kafkajs consumer `broker` makes, before it is used. */
export function eachConsumer(broker: KafkaBroker, touch: (consumer: Consumer) => void): void {
  const createKafka = broker.createKafka.bind(broker);
  broker.createKafka = () => {
    const kafka = createKafka();
    const make = kafka.consumer.bind(kafka);
    kafka.consumer = (config) => {
      const consumer = make(config);
      touch(consumer);
      return consumer;
    };
    return kafka;
  };
}

/**
 * Every committed message of `topic`'s partitions 0 to `partitions` − 1 (read_committed), parsed as JSON, once
 * every transaction written to them so far has its outcome marked (see {@link settled}).
 */
export async function readCommitted<T>(kafka: Kafka, admin: Admin, topic: string, partitions: number): Promise<T[]> {
  await settled(kafka, admin, topic, partitions);
  const read: T[] = [];
  for (let partition = 0; partition < partitions; partition++)
    await readPartition(
      { kafka, admin, topic, partition, groupPrefix: `${topic}.read`, until: 'end', log: silentLogger },
      (m) => read.push(JSON.parse(m.value!.toString()) as T),
    );
  return read;
}

/** How long {@link settled} waits for a transaction's markers at most. */
const SETTLE_MS = 30_000;

/**
 * Resolves once the last stable offset of each of `topic`'s partitions 0 to `partitions` − 1 (what a
 * read_committed offset listing answers, and where a read_committed read of the partition ends) has reached
 * the high watermark it had when this was called. A transaction's commit resolves once its coordinator has
 * decided it; the markers reach its partitions a moment later, and until then a read_committed read ends
 * before the transaction's messages. Call it when no transaction is open on the partitions.
 */
async function settled(kafka: Kafka, admin: Admin, topic: string, partitions: number): Promise<void> {
  const cluster = kafkajsInternals(kafka)!.cluster(READ_UNCOMMITTED);
  const wanted = Array.from({ length: partitions }, (_, partition) => ({ partition }));
  let high: readonly { partition: number; offset: string }[];
  try {
    await cluster.connect();
    await cluster.addTargetTopic(topic);
    const listed = await cluster.fetchTopicsOffset([{ topic, fromBeginning: false, partitions: wanted }]);
    high = listed.find((t) => t.topic === topic)?.partitions ?? [];
  } finally {
    await cluster.disconnect().catch(() => undefined);
  }
  const deadline = Date.now() + SETTLE_MS;
  for (;;) {
    const stable = await admin.fetchTopicOffsets(topic);
    const behind = high.filter(
      ({ partition, offset }) => Number(stable.find((s) => s.partition === partition)?.high) < Number(offset),
    );
    if (behind.length === 0) return;
    if (Date.now() > deadline)
      throw new Error(`${topic}: transaction markers not written in ${SETTLE_MS} ms (${JSON.stringify(behind)})`);
    await new Promise((resolve) => setTimeout(resolve, 20)); // the markers are written by the broker alone
  }
}

/**
 * Writes `transactions` to partition `partition` of `topic` in turn, each a transaction of one producer (the
 * transactional ID `<topic>.writer`, so one producer ID throughout) committed or aborted as it says.
 */
export async function writeTransactions(
  kafka: Kafka,
  topic: string,
  partition: number,
  transactions: readonly { readonly values: readonly string[]; readonly commit: boolean }[],
): Promise<void> {
  const producer = kafka.producer({
    transactionalId: `${topic}.writer`,
    idempotent: true,
    maxInFlightRequests: 1,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  await producer.connect();
  try {
    for (const { values, commit } of transactions) {
      const txn = await producer.transaction();
      await txn.send({ topic, acks: -1, messages: values.map((value) => ({ value, partition })) });
      await (commit ? txn.commit() : txn.abort());
    }
  } finally {
    await producer.disconnect();
  }
}
