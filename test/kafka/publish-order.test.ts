/**
 * KafkaBroker.publish keeps the order of publishes made together, the first ones to a topic it has not
 * published to before included (those each asked the broker whether the topic exists, and the answers could
 * come back in another order).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/index.js';
import { Kafka, logLevel } from '../../src/brokers/kafka/kafkajs.js';
import { readPartition } from '../../src/brokers/kafka/store/partition-reader.js';
import { closePlatformatic, kafkaClients } from './clients.js';
import { closeAll, createTopics, kafkaBrokers } from './fixture.js';
import { uniquePrefix } from './store-fixture.js';

const ROUNDS = 8;
const MESSAGES = 200;

describe.skipIf(!kafkaBrokers).each(kafkaClients)('publish order on Kafka ($name)', { timeout: 60_000 }, (client) => {
  const kafka = new Kafka({ clientId: 'sluice-test', brokers: [kafkaBrokers!], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  afterAll(async () => {
    await admin.disconnect();
    await Promise.all([closeAll(), closePlatformatic()]);
  });

  it(`${MESSAGES} publishes made at once to a topic new to the broker land in the order they were made (${ROUNDS} rounds)`, async () => {
    await admin.connect();
    for (let round = 0; round < ROUNDS; round++) {
      const topic = uniquePrefix('publish-order');
      // Made by another client: the publishing broker has not seen the topic.
      await createTopics(admin, [{ topic, numPartitions: 2, replicationFactor: 1 }]);
      const broker = client.broker();
      await Promise.all(
        Array.from({ length: MESSAGES }, (_, i) =>
          // Half pinned to partition 0, half by a key: both are batched by partition.
          broker.publish(topic, { i }, i % 2 === 0 ? { partition: 0 } : { key: 'one-key' }),
        ),
      );
      const read = async (partition: number): Promise<number[]> => {
        const out: number[] = [];
        await readPartition(
          { kafka, admin, topic, partition, groupPrefix: `${topic}.read`, until: 'end', log: silentLogger },
          (m) => out.push((JSON.parse(m.value!.toString()) as { i: number }).i),
        );
        return out;
      };
      const pinned = await read(0);
      expect(pinned).toEqual(Array.from({ length: MESSAGES / 2 }, (_, n) => 2 * n));
      const keyed = (await Promise.all([read(0), read(1)])).flat().filter((i) => i % 2 === 1);
      expect(keyed).toEqual(Array.from({ length: MESSAGES / 2 }, (_, n) => 2 * n + 1));
      await broker.close();
    }
  });
  it(`${MESSAGES} publishes to a topic new to the broker, made over several turns without waiting, land in the order they were made (${ROUNDS} rounds)`, async () => {
    await admin.connect();
    for (let round = 0; round < ROUNDS; round++) {
      const topic = uniquePrefix('publish-turns');
      await createTopics(admin, [{ topic, numPartitions: 1, replicationFactor: 1 }]);
      const broker = client.broker();
      await broker.connect();
      const published: Promise<void>[] = [];
      for (let i = 0; i < MESSAGES; i++) {
        published.push(broker.publish(topic, { i }, { partition: 0 }));
        if (i % 10 === 9) await new Promise((resolve) => setImmediate(resolve)); // the next ones in a later turn
      }
      await Promise.all(published);
      const got: number[] = [];
      await readPartition(
        { kafka, admin, topic, partition: 0, groupPrefix: `${topic}.read`, until: 'end', log: silentLogger },
        (m) => got.push((JSON.parse(m.value!.toString()) as { i: number }).i),
      );
      expect(got).toEqual(Array.from({ length: MESSAGES }, (_, i) => i));
      await broker.close();
    }
  });
});
