/**
 * Exactly-once from topic to topic on a real Kafka broker, through a rebalance: a second instance joins while
 * messages flow, every partition moves once or more (each move fences the partition's earlier holder), and a
 * reader that reads committed still finds each output once, in each key's order, and nothing of the attempts
 * that failed after publishing.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { App, jsonLogger, silentLogger, subscriber, topic } from '../../src/index.js';
import { Kafka, logLevel } from '../../src/brokers/kafka/kafkajs.js';
import { Counter, Gate } from '../helpers.js';
import { closePlatformatic, kafkaClients } from './clients.js';
import { closeAll, kafkaBrokers, readCommitted } from './fixture.js';
import { uniquePrefix } from './store-fixture.js';

const N = 600;
const KEYS = 20;

interface Order {
  readonly id: number;
  readonly key: string;
}
interface Output extends Order {
  readonly ghost?: boolean;
}

describe.skipIf(!kafkaBrokers).each(kafkaClients)('exactlyOnce on Kafka ($name)', { timeout: 120_000 }, (client) => {
  const kafka = new Kafka({ clientId: 'sluice-test', brokers: [kafkaBrokers!], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  afterAll(async () => {
    await admin.disconnect();
    await Promise.all([closeAll(), closePlatformatic()]);
  });

  it(`a join while ${N} messages flow leaves each output once, in its key's order`, async () => {
    const run = uniquePrefix('eos');
    const orders = topic<Order>(`${run}.orders`, { key: (o) => o.key });
    const outputs = topic<Output>(`${run}.out`, { key: (o) => o.key });
    const handled = new Counter();
    const by: number[] = [0, 0];
    const joined = new Gate();
    const instance = (n: number): App =>
      new App({
        name: `${run}-app`,
        logger: process.env.EOS_LOG ? jsonLogger({ level: 'info' }) : silentLogger,
      }).withBroker(client.broker({ createTopics: { partitions: 3 } }), (b) =>
        b.include(
          subscriber(orders, async (o, ctx) => {
            if (o.id % 5 === 0 && ctx.message.attempt === 1) {
              await ctx.publish(outputs.name, { ...o, ghost: true }, { key: o.key });
              throw new Error('the first attempt fails after publishing');
            }
            // The first instance's later handlers wait for the join: they are in flight as the rebalance begins.
            if (n === 0 && handled.value >= N / 6) await joined.promise;
            handled.add();
            by[n]!++;
            return o;
          })
            .publishTo(outputs)
            .workersByKey(4)
            .retry({ attempts: 3, backoff: { initialMs: 5 } })
            .exactlyOnce(),
        ),
      );
    const first = instance(0);
    await first.start();
    const publisher = client.broker({ createTopics: { partitions: 3 } });
    const publish = (from: number, to: number) =>
      Promise.all(
        Array.from({ length: to - from }, (_, i) => {
          const id = from + i;
          return publisher.publish(orders.name, { id, key: `k${id % KEYS}` }, { key: `k${id % KEYS}` });
        }),
      );
    await publish(0, N / 2);
    await handled.reach(N / 6);
    const second = instance(1);
    const joining = second.start(); // a rebalance: the first instance's partitions are committed, released, fenced
    joined.open();
    await joining;
    await publish(N / 2, N);
    await Promise.all([first.idle(), second.idle()]);
    await Promise.all([first.stop(), second.stop()]);
    expect(by[0]).toBeGreaterThan(0);
    expect(by[1]).toBeGreaterThan(0);
    const read = await readCommitted<Output>(kafka, admin, outputs.name, 3);
    expect(read.filter((o) => o.ghost === true)).toEqual([]);
    expect(read.map((o) => o.id).sort((a, b) => a - b)).toEqual(Array.from({ length: N }, (_, i) => i));
    for (let k = 0; k < KEYS; k++) {
      const ids = read.filter((o) => o.key === `k${k}`).map((o) => o.id);
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
    }
  });

  it('dead-letters a delivery whose output the broker refuses for good, and commits every other output once', async () => {
    const run = uniquePrefix('eos-refused');
    const orders = topic<Order>(`${run}.orders`, { key: (o) => o.key });
    const outputs = topic<Output & { readonly pad?: string }>(`${run}.out`);
    const dead = `${run}.dead`;
    const broker = () => client.broker({ createTopics: { partitions: 1 } });
    const app = new App({ name: `${run}-app`, logger: silentLogger }).withBroker(broker(), (b) =>
      b.include(
        // Output 7 is 2 MB, past the broker's limit (about 1 MB a message): MESSAGE_TOO_LARGE.
        subscriber(orders, (o) => (o.id === 7 ? { ...o, pad: 'x'.repeat(2_000_000) } : o))
          .publishTo(outputs)
          .deadLetter(dead)
          .exactlyOnce(),
      ),
    );
    await app.start();
    const publisher = broker();
    for (let id = 0; id < 20; id++) await publisher.publish(orders.name, { id, key: `k${id}` });
    await app.idle();
    await app.stop();
    const read = await readCommitted<Output>(kafka, admin, outputs.name, 1);
    expect(read.map((o) => o.id)).toEqual(Array.from({ length: 20 }, (_, i) => i).filter((i) => i !== 7));
    expect((await readCommitted<Order>(kafka, admin, dead, 1)).map((o) => o.id)).toEqual([7]);
  });
});
