/**
 * @platformatic/kafka reading a partition written in transactions, some committed and some aborted, by one
 * transactional ID (as a shard's writer, fenced now and then, writes its changelog): the app's consumer and a
 * read without a group (the Kafka store's restore, `readTopic`) both see every committed record and no aborted
 * one. The client's own filter (2.12.1) dropped the committed transactions between two abort markers of one
 * producer in a fetch answer: a restored shard lost acknowledged events (src/brokers/platformatic/committed-fetch.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kafka, Partitioners, logLevel } from '../../src/brokers/kafka/kafkajs.js';
import { uniqueTopic } from '../contract/broker-contract.js';
import { closePlatformatic, platformaticRuns, testPlatformatic } from './clients.js';
import { kafkaBrokers } from './fixture.js';

describe.skipIf(!kafkaBrokers || !platformaticRuns)(
  'kafka on @platformatic/kafka: reading committed transactions only',
  { timeout: 60_000 },
  () => {
    const topic = uniqueTopic('pk-txn');
    const committed = ['a', 'b', 'c', 'd', 'e', 'f', 'end'];

    beforeAll(async () => {
      const kafka = new Kafka({ clientId: 'sluice-test', brokers: [kafkaBrokers!], logLevel: logLevel.NOTHING });
      const admin = kafka.admin();
      await admin.connect();
      await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 1, replicationFactor: 1 }] });
      await admin.disconnect();
      const producer = kafka.producer({
        transactionalId: `${topic}.writer`,
        idempotent: true,
        maxInFlightRequests: 1,
        createPartitioner: Partitioners.DefaultPartitioner,
      });
      await producer.connect();
      const write = async (values: string[], commit: boolean): Promise<void> => {
        const txn = await producer.transaction();
        await txn.send({ topic, acks: -1, messages: values.map((value) => ({ value, partition: 0 })) });
        await (commit ? txn.commit() : txn.abort());
      };
      // Committed transactions between aborted ones of the same producer, and an aborted one just before the end.
      await write(['a'], true);
      await write(['aborted-1'], false);
      await write(['b', 'c'], true);
      await write(['d'], true);
      await write(['aborted-2', 'aborted-3'], false);
      await write(['e'], true);
      await write(['aborted-4'], false);
      await write(['f'], true);
      await write(['aborted-5'], false);
      await write(['end'], true);
      await producer.disconnect();
    });
    afterAll(async () => {
      await closePlatformatic();
    });

    for (const protocol of ['classic', 'consumer'] as const)
      it(`the app's consumer (${protocol} protocol) takes every committed record, and no aborted one`, async () => {
        const broker = testPlatformatic(protocol);
        let readable: () => void = () => {};
        const consumer = await broker.consume({
          topic,
          group: `${topic}.${protocol}`,
          onReadable: () => readable(),
          onRevoke: async () => {},
        });
        const seen: string[] = [];
        while (seen.at(-1) !== 'end') {
          const next = new Promise<void>((resolve) => (readable = resolve));
          const taken = consumer.take(100);
          for (const m of taken) seen.push(Buffer.from(m.value).toString());
          if (taken.length === 0) await next;
        }
        await consumer.close();
        expect(seen).toEqual(committed);
      });

    it('a read without a group (the store’s restore, readTopic) visits every committed record, and no aborted one', async () => {
      const broker = testPlatformatic('classic');
      const seen: string[] = [];
      await broker.readTopic(topic, 0, 0, (m) => {
        seen.push(Buffer.from(m.value).toString());
        return true;
      });
      expect(seen).toEqual(committed);
      // From within: past an aborted transaction's first record.
      const after: string[] = [];
      await broker.readTopic(topic, 0, 3, (m) => {
        after.push(Buffer.from(m.value).toString());
        return true;
      });
      expect(after).toEqual(committed.slice(1));
    });
  },
);
