/**
 * @platformatic/kafka reading a partition written in transactions, some committed and some aborted, by one
 * transactional ID (as a shard's writer, fenced now and then, writes its changelog): the app's consumer and a
 * read without a group (the Kafka store's restore, `readTopic`) both see every committed record and no aborted
 * one. The client's own filter (2.12.1) dropped the committed transactions between two abort markers of one
 * producer in a fetch answer: a restored shard lost acknowledged events (src/brokers/platformatic/committed-fetch.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kafka, logLevel } from '../../src/brokers/kafka/kafkajs.js';
import { uniqueTopic } from '../contract/broker-contract.js';
import { closePlatformatic, platformaticRuns, testPlatformatic } from './clients.js';
import { kafkaBrokers, writeTransactions } from './fixture.js';

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
      // Committed transactions between aborted ones of the same producer, and an aborted one just before the end.
      const txn = (commit: boolean, ...values: string[]) => ({ values, commit });
      await writeTransactions(kafka, topic, 0, [
        txn(true, 'a'),
        txn(false, 'aborted-1'),
        txn(true, 'b', 'c'),
        txn(true, 'd'),
        txn(false, 'aborted-2', 'aborted-3'),
        txn(true, 'e'),
        txn(false, 'aborted-4'),
        txn(true, 'f'),
        txn(false, 'aborted-5'),
        txn(true, 'end'),
      ]);
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
