import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { KafkaBroker } from '../../src/brokers/kafka/index.js';
import { brokerContract, uniqueTopic } from '../contract/broker-contract.js';
import { deadLetterContract } from '../contract/dead-letter-contract.js';
import { closePlatformatic, platformaticRuns, testPlatformatic } from './clients.js';
import { kafkaBrokers } from './fixture.js';

for (const protocol of ['classic', 'consumer'] as const) {
  describe.skipIf(!kafkaBrokers || !platformaticRuns)(
    `kafka on @platformatic/kafka, ${protocol} group protocol`,
    () => {
      const admin = kafkaBrokers && platformaticRuns ? testPlatformatic(protocol) : undefined;
      afterAll(async () => {
        await closePlatformatic();
      });
      const fixture = {
        connect: () => testPlatformatic(protocol),
        createTopic: (name: string, partitions: number) => admin!.createTopic(name, partitions),
      };
      brokerContract(`platformatic ${protocol}`, fixture);
      deadLetterContract(`platformatic ${protocol}`, fixture);
    },
  );
}

describe.skipIf(!kafkaBrokers || !platformaticRuns)('kafka on @platformatic/kafka: publishing', () => {
  afterAll(async () => {
    await closePlatformatic();
  });

  it('places a key where kafkajs and Java clients do, and a keyed message lands there', async () => {
    const kafkajs = new KafkaBroker({ brokers: [kafkaBrokers!] });
    const broker = testPlatformatic('classic');
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.integer({ min: 1, max: 64 }), (key, partitions) => {
        expect(broker.partitionOf(key, partitions)).toBe(kafkajs.partitionOf(key, partitions));
      }),
    );
    const topic = uniqueTopic('pk-keys');
    await broker.createTopic(topic, 3);
    const keys = ['foobar', '21', 'k1', 'customer-42'];
    for (const key of keys) await broker.publish(topic, { key }, { key });
    let readable: () => void = () => {};
    const consumer = await broker.consume({
      topic,
      group: `${topic}.read`,
      onReadable: () => readable(),
      onRevoke: async () => {},
    });
    const seen: [string | undefined, number][] = [];
    for (;;) {
      const next = new Promise<void>((resolve) => (readable = resolve));
      for (const m of consumer.take(100)) seen.push([m.key, m.partition]);
      if (seen.length >= keys.length) break;
      await next;
    }
    await consumer.close();
    expect(seen.sort()).toEqual(keys.map((k) => [k, broker.partitionOf(k, 3)]).sort());
  });

  it('hands out the partitions in turn: one partition with a long backlog does not hold another back', async () => {
    const broker = testPlatformatic('classic');
    const topic = uniqueTopic('pk-turns');
    await broker.createTopic(topic, 2);
    for (let n = 0; n < 40; n++) await broker.publish(topic, { n }, { partition: 0 });
    for (let n = 0; n < 4; n++) await broker.publish(topic, { n }, { partition: 1 });
    let readable: () => void = () => {};
    const consumer = await broker.consume({
      topic,
      group: `${topic}.read`,
      onReadable: () => readable(),
      onRevoke: async () => {},
    });
    while (consumer.backlog() < 44) await new Promise<void>((resolve) => (readable = resolve));
    const partitions = Array.from({ length: 8 }, () => consumer.take(1)[0]!.partition);
    await consumer.close();
    expect(partitions.filter((p) => p === 1)).toHaveLength(4);
  });

  it('refuses a message too large (PUBLISH_REFUSED), a partition the topic lacks (CONFIG_INVALID), a missing topic (TOPIC_MISSING)', async () => {
    const broker = testPlatformatic('classic');
    const topic = uniqueTopic('pk-refused');
    await broker.createTopic(topic, 1);
    await expect(broker.publish(topic, Buffer.alloc(2 * 1024 * 1024))).rejects.toMatchObject({
      code: 'PUBLISH_REFUSED',
    });
    await expect(broker.publish(topic, 'x', { partition: 5 })).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    await expect(broker.publish(uniqueTopic('pk-missing'), 'x')).rejects.toMatchObject({ code: 'TOPIC_MISSING' });
    await broker.publish(topic, 'still serving');
  });
});
