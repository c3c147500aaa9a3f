/**
 * What goes out of an app, on a real Kafka broker: a chain of subscribers linked by `publishTo` hands every
 * message on (each input committed once its output is acknowledged), `app.publisher` publishes typed values,
 * and `app.request` is answered by a decorated subscriber with `replies: true`, each of two instances of
 * one app getting its own replies on the one reply topic.
 */
import 'reflect-metadata';
import { afterAll, describe, expect, it } from 'vitest';
import { App, silentLogger, subscriber, topic, type Context } from '../../src/index.js';
import { closePlatformatic, kafkaClients } from './clients.js';
import { closeAll, kafkaBrokers } from './fixture.js';
import { uniquePrefix } from './store-fixture.js';

interface Order {
  readonly id: number;
}
interface Invoice {
  readonly orderId: number;
  readonly total: number;
}
const N = 300;

describe.skipIf(!kafkaBrokers).each(kafkaClients)('publishing on Kafka ($name)', { timeout: 90_000 }, (client) => {
  afterAll(() => Promise.all([closeAll(), closePlatformatic()]));

  it(`a chain orders → invoices → receipts hands on each of ${N} messages once`, async () => {
    const run = uniquePrefix('chain');
    const orders = topic<Order>(`${run}.orders`, { key: (o) => String(o.id) });
    const invoices = topic<Invoice>(`${run}.invoices`, { key: (i) => String(i.orderId) });
    const receipts = topic<Invoice>(`${run}.receipts`);
    const seen: number[] = [];
    const broker = client.broker({ createTopics: { partitions: 3 } });
    const app = new App({ name: run, logger: silentLogger }).withBroker(broker, (b) =>
      b.include(
        subscriber(orders, (o) => ({ orderId: o.id, total: o.id * 2 }))
          .publishTo(invoices)
          .workers(8),
        subscriber(invoices, (i) => i)
          .publishTo(receipts)
          .workersByKey(4),
        subscriber(receipts, (r) => void seen.push(r.orderId)).workers(4),
      ),
    );
    await app.start();
    const publisher = app.publisher(orders);
    await Promise.all(Array.from({ length: N }, (_, id) => publisher.publish({ id })));
    await app.idle();
    expect([...seen].sort((a, b) => a - b)).toEqual(Array.from({ length: N }, (_, i) => i));
    expect(Object.values(app.deadLetters()).map((c) => c.published)).toEqual([0, 0, 0]);
    await app.stop();
  });

  it('two instances of one app each get the replies to their own requests', async () => {
    const run = uniquePrefix('rates');
    const rates = topic<{ from: string; to: string }, { rate: number; for: string }>(`${run}.rates`);
    class Rates {
      @subscriber(rates, { replies: true, workers: 8 })
      quote(q: { from: string; to: string }, ctx: Context): { rate: number; for: string } {
        void ctx;
        return { rate: q.to.length, for: q.to };
      }
    }
    const server = new App({ name: `${run}-server`, logger: silentLogger }).withBroker(
      client.broker({ createTopics: { partitions: 3 } }),
      (b) => b.include(Rates),
    );
    const instance = (): App =>
      new App({ name: `${run}-shop`, logger: silentLogger }).withBroker(
        client.broker({ createTopics: { partitions: 3 } }),
        () => {},
      );
    const [a, b] = [instance(), instance()];
    await Promise.all([server.start(), a.start(), b.start()]);
    const ask = (app: App, tag: string) =>
      Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          app.request(rates, { from: 'EUR', to: `${tag}${i}` }, { timeoutMs: 30_000 }),
        ),
      );
    const [fromA, fromB] = await Promise.all([ask(a, 'a'), ask(b, 'bb')]);
    expect(fromA.map((r) => r.for)).toEqual(Array.from({ length: 50 }, (_, i) => `a${i}`));
    expect(fromB.map((r) => r.rate)).toEqual(Array.from({ length: 50 }, (_, i) => `bb${i}`.length));
    expect(a.requestCounts()).toEqual({ sent: 50, replied: 50, timedOut: 0, late: 0 });
    expect(b.requestCounts()).toEqual({ sent: 50, replied: 50, timedOut: 0, late: 0 });
    await Promise.all([a.stop(), b.stop(), server.stop()]);
  });
});
