/**
 * Typed topics and what goes out of an app: a subscriber's return value published on its `publishTo` topics
 * (acknowledged by the broker before the input counts as done; a publish that fails fails the attempt),
 * `app.publisher(topic).publish`, and `app.request` answered by a subscriber marked `.replies()`, with its
 * timeout and its late replies counted. On the memory broker; test/kafka/publishing.test.ts runs the same
 * against Kafka.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  App,
  HandlerOutcome,
  ManualClock,
  MemoryBroker,
  REPLY_TO_HEADER,
  SluiceError,
  silentLogger,
  subscriber,
  topic,
  type PublishInfo,
} from '../../src/index.js';
import { expectError } from '../expect-error.js';
import { Gate } from '../helpers.js';

const Order = z.object({ id: z.string(), cents: z.number().int() });
type Order = z.infer<typeof Order>;
interface Invoice {
  readonly orderId: string;
  readonly total: number;
}

const orders = topic('orders', { schema: Order });
const invoices = topic<Invoice>('invoices', { key: (i) => i.orderId, headers: { 'x-kind': 'invoice' } });
const audit = topic<Invoice>('audit');
const invoiceOf = (o: Order): Invoice => ({ orderId: o.id, total: o.cents / 100 });

function appOn(broker: MemoryBroker, clock?: ManualClock): App {
  return new App({ name: 'billing', logger: silentLogger, ...(clock ? { clock } : {}) });
}

describe('publishTo', () => {
  it("publishes the handler's return value on each topic, keyed and headed by the topic", async () => {
    const broker = new MemoryBroker();
    const app = appOn(broker).withBroker(broker, (b) =>
      b.include(
        subscriber(orders, (o) => invoiceOf(o))
          .publishTo(invoices)
          .publishTo(audit),
      ),
    );
    await app.start();
    await broker.publish('orders', { id: 'o-1', cents: 1250 });
    await broker.publish('orders', { id: 'o-2', cents: 99 });
    await app.idle();
    expect(broker.values('invoices')).toEqual([
      { orderId: 'o-1', total: 12.5 },
      { orderId: 'o-2', total: 0.99 },
    ]);
    expect(broker.values('audit')).toHaveLength(2);
    const [first] = broker.messages('invoices');
    expect(first!.key).toBe('o-1');
    expect(first!.headers['x-kind']).toBe('invoice');
    expect(broker.messages('orders.dlq')).toHaveLength(0);
    await app.stop();
  });

  it('publishes nothing for undefined, and an outcome still means what it means', async () => {
    const broker = new MemoryBroker();
    const handler = (o: Order): Invoice | HandlerOutcome | undefined => {
      if (o.cents < 0) return HandlerOutcome.reject('negative');
      if (o.cents === 0) return undefined;
      return invoiceOf(o);
    };
    const app = appOn(broker).withBroker(broker, (b) => b.include(subscriber(orders, handler).publishTo(invoices)));
    await app.start();
    for (const cents of [0, -5, 7]) await broker.publish('orders', { id: `o${cents}`, cents });
    await app.idle();
    expect(broker.values('invoices')).toEqual([{ orderId: 'o7', total: 0.07 }]);
    expect(broker.values('orders.dlq')).toEqual([{ id: 'o-5', cents: -5 }]);
    await app.stop();
  });

  it('a publish that fails fails the attempt: retried, then dead-lettered with its reason', async () => {
    const broker = new MemoryBroker();
    let refusals = 1;
    const app = appOn(broker)
      .usePublish(async (message, next, info) => {
        if (info.kind === 'publish' && message.topic === 'invoices' && refusals-- > 0) throw new Error('broker away');
        return next(message);
      })
      .withBroker(broker, (b) =>
        b.include(
          subscriber(orders, (o) => invoiceOf(o))
            .publishTo(invoices)
            .retry({ attempts: 2, backoff: { initialMs: 0 } }),
        ),
      );
    await app.start();
    await broker.publish('orders', { id: 'o-1', cents: 100 });
    await app.idle();
    expect(broker.values('invoices')).toEqual([{ orderId: 'o-1', total: 1 }]); // the second attempt's
    refusals = 2;
    await broker.publish('orders', { id: 'o-2', cents: 100 });
    await app.idle();
    expect(broker.values('invoices')).toHaveLength(1);
    const [dead] = broker.messages('orders.dlq');
    expect(dead!.headers['x-sluice-error']).toMatch(/broker away/);
    await app.stop();
  });

  it('the input is not done before the broker has the output', async () => {
    const broker = new MemoryBroker();
    const held = new Gate();
    const app = appOn(broker)
      .usePublish(async (message, next) => {
        if (message.topic === 'invoices') await held.promise;
        return next(message);
      })
      .withBroker(broker, (b) => b.include(subscriber(orders, (o) => invoiceOf(o)).publishTo(invoices)));
    await app.start();
    await broker.publish('orders', { id: 'o-1', cents: 1 });
    let idle = false;
    const idled = app.idle().then(() => (idle = true));
    await new Promise((r) => setImmediate(r));
    expect(idle).toBe(false);
    expect(broker.committed('billing', 'orders')).toEqual([0]);
    held.open();
    await idled;
    expect(broker.committed('billing', 'orders')).toEqual([1]);
    await app.stop();
  });

  it('refuses what is not a topic, and a topic given twice, at mount', () => {
    expectError(
      () =>
        subscriber('orders', () => {})
          .publishTo('invoices' as never)
          .build(),
      'CONFIG_INVALID',
      /publishTo\[0\] must be a topic made by topic\(\)/,
    );
    expectError(
      () =>
        subscriber(orders, () => {})
          .publishTo(audit)
          .publishTo(audit)
          .build(),
      'CONFIG_INVALID',
      /publishTo\[1\]/,
    );
    expectError(() => topic(''), 'CONFIG_INVALID', /non-empty/);
    expectError(() => topic('t', { shema: Order } as never), 'CONFIG_INVALID', /shema/);
    expectError(
      () =>
        subscriber('rates', () => 1)
          .replies()
          .batch({ max: 2 })
          .build(),
      'CONFIG_INVALID',
      /replies must be left out with batch and pace/,
    );
  });
});

describe('app.publisher', () => {
  it('publishes typed values through the publish middlewares, told it is the app', async () => {
    const broker = new MemoryBroker();
    const seen: PublishInfo[] = [];
    const app = appOn(broker)
      .usePublish(async (message, next, info) => {
        seen.push(info);
        return next(message);
      })
      .withBroker(broker, () => {});
    const publisher = app.publisher(invoices);
    await expect(publisher.publish({ orderId: 'x', total: 1 })).rejects.toMatchObject({ code: 'APP_STATE' });
    await app.start();
    await publisher.publish({ orderId: 'o-9', total: 3 }, { headers: { 'x-trace': 't' } });
    expect(broker.values('invoices')).toEqual([{ orderId: 'o-9', total: 3 }]);
    expect(broker.messages('invoices')[0]!.key).toBe('o-9');
    expect(broker.messages('invoices')[0]!.headers).toMatchObject({ 'x-kind': 'invoice', 'x-trace': 't' });
    expect(seen).toEqual([{ kind: 'publisher', subscriber: 'billing', context: undefined }]);
    await app.stop();
  });

  it('needs the broker to be named when the app has several', async () => {
    const [one, two] = [new MemoryBroker(), new MemoryBroker()];
    const app = appOn(one)
      .withBroker(one, () => {})
      .withBroker(two, () => {});
    await app.start();
    await expect(app.publisher(audit).publish({ orderId: 'a', total: 1 })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
    });
    await app.publisher(audit, { broker: two }).publish({ orderId: 'a', total: 1 });
    expect(two.values('audit')).toHaveLength(1);
    expect(one.values('audit')).toHaveLength(0);
    await app.stop();
  });
});

const Rate = z.object({ rate: z.number() });
const rates = topic('rates', { schema: z.object({ from: z.string(), to: z.string() }), reply: Rate });

describe('app.request', () => {
  it("resolves with the reply of the subscriber that replies, decoded by the topic's reply schema", async () => {
    const broker = new MemoryBroker();
    const server = appOn(broker).withBroker(broker, (b) =>
      b.include(
        subscriber(rates, (q) => ({ rate: q.from === q.to ? 1 : 1.08 }))
          .replies()
          .workers(4),
      ),
    );
    const client = new App({ name: 'shop', logger: silentLogger }).withBroker(broker, () => {});
    await server.start();
    await client.start();
    const answers = await Promise.all(
      ['USD', 'EUR', 'USD'].map((to) => client.request(rates, { from: 'EUR', to }, { timeoutMs: 5_000 })),
    );
    expect(answers).toEqual([{ rate: 1.08 }, { rate: 1 }, { rate: 1.08 }]);
    expect(client.requestCounts()).toEqual({ sent: 3, replied: 3, timedOut: 0, late: 0 });
    expect(broker.messages('rates')[0]!.headers[REPLY_TO_HEADER]).toBe('shop.replies');
    await client.stop();
    expect(client.requestCounts()).toMatchObject({ sent: 3, replied: 3 }); // still readable once stopped
    await server.stop();
  });

  it('times out with REQUEST_TIMEOUT, and a reply that comes later is dropped and counted', async () => {
    const broker = new MemoryBroker();
    const clock = new ManualClock(0);
    const held = new Gate();
    const app = new App({ name: 'shop', logger: silentLogger, clock }).withBroker(broker, (b) =>
      b.include(
        subscriber(rates, async () => {
          await held.promise;
          return { rate: 2 };
        }).replies(),
      ),
    );
    await app.start();
    const asked = app.request(rates, { from: 'EUR', to: 'GBP' }, { timeoutMs: 1_000 }).catch((e: unknown) => e);
    await new Promise((r) => setImmediate(r));
    await clock.advance(1_000);
    const error = await asked;
    expect(error).toBeInstanceOf(SluiceError);
    expect((error as SluiceError).code).toBe('REQUEST_TIMEOUT');
    expect((error as SluiceError).message).toMatch(/no reply within 1000 ms/);
    held.open();
    await app.idle();
    expect(app.requestCounts()).toEqual({ sent: 1, replied: 0, timedOut: 1, late: 1 });
    await app.stop();
  });

  it('a request the app stops under rejects with APP_STATE', async () => {
    const broker = new MemoryBroker();
    const app = appOn(broker).withBroker(broker, () => {});
    await app.start();
    const asked = app.request(rates, { from: 'a', to: 'b' });
    await new Promise((r) => setImmediate(r));
    await app.stop();
    await expect(asked).rejects.toMatchObject({ code: 'APP_STATE' });
    await expect(app.request(rates, { from: 'a', to: 'b' })).rejects.toMatchObject({ code: 'APP_STATE' });
  });
});
