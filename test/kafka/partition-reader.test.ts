/**
 * readPartition, as the Kafka store's shard logs read their partitions: without a consumer group (a fetch
 * through kafkajs's own cluster), and, with a kafkajs that lacks the internals for it, in a group of its own.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../src/index.js';
import { Kafka, kafkajsInternals, logLevel } from '../../src/brokers/kafka/kafkajs.js';
import { readPartition, type PartitionRead } from '../../src/brokers/kafka/store/partition-reader.js';
import { createTopics, kafkaBrokers, writeTransactions } from './fixture.js';
import { uniquePrefix } from './store-fixture.js';

describe.skipIf(!kafkaBrokers)('readPartition', { timeout: 60_000 }, () => {
  const kafka = new Kafka({ clientId: 'sluice-test', brokers: [kafkaBrokers!], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  const topic = uniquePrefix('reader');
  /** What partition 1 holds: committed transactions, an aborted one between them, and their markers. */
  const committed = ['a', 'b', 'c', 'd'];

  beforeAll(async () => {
    await admin.connect();
    await createTopics(admin, [{ topic, numPartitions: 2, replicationFactor: 1 }]);
    await writeTransactions(kafka, topic, 1, [
      { values: ['a', 'b'], commit: true },
      { values: ['aborted-1', 'aborted-2'], commit: false },
      { values: ['c'], commit: true },
      { values: ['d'], commit: true },
    ]);
  });
  afterAll(async () => {
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
  });

  const reading = (k: typeof kafka, until: PartitionRead['until'], partition = 1): PartitionRead => ({
    kafka: k,
    admin,
    topic,
    partition,
    groupPrefix: `${topic}.read`,
    until,
    log: silentLogger,
  });
  const values = async (read: PartitionRead): Promise<string[]> => {
    const out: string[] = [];
    await readPartition(read, (m) => out.push(m.value!.toString()));
    return out;
  };

  it('finds the internals of the kafkajs installed', () => {
    expect(kafkajsInternals(kafka)).toBeDefined();
    expect(kafkajsInternals(kafka, () => undefined)).toBeUndefined(); // no Batch: a kafkajs of another shape
  });

  it('reads the committed messages to the end without a consumer group, none of an aborted transaction', async () => {
    const consumer = vi.spyOn(kafka, 'consumer');
    expect(await values(reading(kafka, 'end'))).toEqual(committed);
    expect(await values(reading(kafka, 'end', 0))).toEqual([]); // an empty partition
    expect(await values(reading(kafka, (m) => m.value!.toString() === 'c'))).toEqual(['a', 'b', 'c']);
    expect(consumer).not.toHaveBeenCalled();
    consumer.mockRestore();
  });

  it('reads the same in a consumer group of its own when kafkajs lacks the internals, and leaves no group', async () => {
    // The client as a kafkajs of another version would be: no cluster maker under a symbol.
    const other = new Proxy(kafka, {
      ownKeys: (target) => Reflect.ownKeys(target).filter((k) => typeof k !== 'symbol'),
    });
    expect(kafkajsInternals(other)).toBeUndefined();
    const consumer = vi.spyOn(kafka, 'consumer');
    expect(await values(reading(other, 'end'))).toEqual(committed);
    expect(await values(reading(other, (m) => m.value!.toString() === 'b'))).toEqual(['a', 'b']);
    expect(consumer).toHaveBeenCalledTimes(2);
    consumer.mockRestore();
    const { groups } = await admin.listGroups();
    expect(groups.filter((g) => g.groupId.startsWith(`${topic}.read`))).toEqual([]);
  });

  it('reads from the partition start once the records before it were deleted', async () => {
    const [low] = (await admin.fetchTopicOffsets(topic)).filter((o) => o.partition === 1);
    expect(Number(low!.low)).toBe(0);
    await admin.deleteTopicRecords({ topic, partitions: [{ partition: 1, offset: '3' }] }); // a, b and a marker
    expect(await values(reading(kafka, 'end'))).toEqual(['c', 'd']);
  });
});
