/**
 * @platformatic/kafka reading a partition written in transactions, some committed and some aborted, by one
 * transactional ID (as a shard's writer, fenced now and then, writes its changelog): the app's consumer and a
 * read without a group (the Kafka store's restore, `readTopic`) both see every committed record and no aborted
 * one. The client's own filter (2.12.1) dropped the committed transactions between two abort markers of one
 * producer in a fetch answer: a restored shard lost acknowledged events (src/brokers/platformatic/committed-fetch.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Producer } from 'kafkajs';
import { Kafka, logLevel } from '../../src/brokers/kafka/kafkajs.js';
import { uniqueTopic } from '../contract/broker-contract.js';
import { closePlatformatic, platformaticRuns, testPlatformatic } from './clients.js';
import { createTopics, kafkaBrokers, writeTransactions } from './fixture.js';

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
      await createTopics(admin, [{ topic, numPartitions: 1, replicationFactor: 1 }]);
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

    it('two producers’ aborted transactions interleaved: a read from any offset among them hands out none of them', async () => {
      // Exactly-once publishers of several input partitions write one output partition side by side so.
      const kafka = new Kafka({ clientId: 'sluice-test', brokers: [kafkaBrokers!], logLevel: logLevel.NOTHING });
      const broker = testPlatformatic('classic');
      const interleaved = uniqueTopic('pk-txn-interleaved');
      await broker.createTopic(interleaved, 1);
      const [p1, p2] = ['a', 'b'].map((id) =>
        kafka.producer({ transactionalId: `${interleaved}.${id}`, idempotent: true, maxInFlightRequests: 1 }),
      );
      await Promise.all([p1!.connect(), p2!.connect()]);
      const send = (t: { send: Producer['send'] }, value: string) =>
        t.send({ topic: interleaved, acks: -1, messages: [{ value, partition: 0 }] });
      let t = await p1!.transaction();
      await send(t, 'before'); // 0, its marker at 1
      await t.commit();
      const [a, b] = [await p1!.transaction(), await p2!.transaction()];
      for (const [txn, value] of [
        [a, 'x1'],
        [b, 'y1'],
        [a, 'x2'],
        [b, 'y2'],
      ] as const)
        await send(txn, value); // 2–5
      await a.abort(); // 6
      await b.abort(); // 7
      t = await p1!.transaction();
      await send(t, 'after'); // 8, its marker at 9
      await t.commit();
      await Promise.all([p1!.disconnect(), p2!.disconnect()]);
      for (let from = 0; from <= 8; from++) {
        const seen: string[] = [];
        await broker.readTopic(interleaved, 0, from, (m) => {
          seen.push(Buffer.from(m.value).toString());
          return true;
        });
        expect(seen, `from offset ${from}`).toEqual(from === 0 ? ['before', 'after'] : ['after']);
      }
    });
  },
);
