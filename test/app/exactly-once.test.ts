/**
 * Exactly-once on the memory broker: what an `exactlyOnce` subscriber publishes is committed with its input
 * offsets, so a failed attempt's publishes, a dead-lettered delivery's, and a fenced holder's never show, and
 * what finished above a delivery still running waits for it. test/kafka/exactly-once.test.ts runs it on Kafka.
 */
import { describe, expect, it } from 'vitest';
import { App, MemoryBroker, memoryStore, silentLogger, subscriber, topic, type Broker } from '../../src/index.js';
import { expectError } from '../expect-error.js';
import { Counter, Gate } from '../helpers.js';

interface Order {
  readonly id: string;
}
const orders = topic<Order>('orders');
const invoices = topic<{ orderId: string }>('invoices');

function appOn(): App {
  return new App({ name: 'billing', logger: silentLogger });
}

describe('exactlyOnce', () => {
  it("publishes only the attempt that succeeded: a failed attempt's publishes are dropped", async () => {
    const broker = new MemoryBroker();
    const app = appOn().withBroker(broker, (b) =>
      b.include(
        subscriber(orders, async (o, ctx) => {
          await ctx.publish('audit', { tried: ctx.message.attempt });
          if (ctx.message.attempt === 1) throw new Error('first attempt fails');
          return { orderId: o.id };
        })
          .publishTo(invoices)
          .retry({ attempts: 3, backoff: { initialMs: 0 } })
          .exactlyOnce(),
      ),
    );
    await app.start();
    await broker.publish('orders', { id: 'o-1' });
    await app.idle();
    expect(broker.values('invoices')).toEqual([{ orderId: 'o-1' }]);
    expect(broker.values('audit')).toEqual([{ tried: 2 }]);
    expect(broker.committed('billing', 'orders')).toEqual([1]);
    await app.stop();
  });

  it('holds what finished above a delivery still running, then commits both in offset order', async () => {
    const broker = new MemoryBroker({ partitions: 1 });
    const first = new Gate();
    const second = new Counter();
    const app = appOn().withBroker(broker, (b) =>
      b.include(
        subscriber(orders, async (o) => {
          if (o.id === 'o-1') await first.promise;
          else second.add();
          return { orderId: o.id };
        })
          .publishTo(invoices)
          .workers(2)
          .exactlyOnce(),
      ),
    );
    await app.start();
    await broker.publish('orders', { id: 'o-1' });
    await broker.publish('orders', { id: 'o-2' });
    await second.reach(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(broker.values('invoices')).toEqual([]); // o-2 finished, but waits for o-1 below it
    expect(broker.committed('billing', 'orders')).toEqual([0]);
    first.open();
    await app.idle();
    expect(broker.values('invoices')).toEqual([{ orderId: 'o-1' }, { orderId: 'o-2' }]);
    expect(broker.committed('billing', 'orders')).toEqual([2]);
    await app.stop();
  });

  it('publishes nothing of a dead-lettered delivery, and commits its offset with the dead letter out', async () => {
    const broker = new MemoryBroker();
    const app = appOn().withBroker(broker, (b) =>
      b.include(
        subscriber(orders, async (o, ctx) => {
          await ctx.publish('invoices', { orderId: o.id });
          throw new Error('always fails');
        })
          .retry({ attempts: 2, backoff: { initialMs: 0 } })
          .exactlyOnce(),
      ),
    );
    await app.start();
    await broker.publish('orders', { id: 'o-1' });
    await app.idle();
    expect(broker.values('invoices')).toEqual([]);
    expect(broker.values('orders.dlq')).toEqual([{ id: 'o-1' }]);
    expect(broker.committed('billing', 'orders')).toEqual([1]);
    await app.stop();
  });

  it('a holder fenced by a newer one commits nothing, and the newer one handles the delivery once', async () => {
    const broker = new MemoryBroker({ partitions: 1 });
    const held = new Gate();
    const started = new Counter();
    const handled: string[] = [];
    const make = (name: string, wait: boolean): App =>
      appOn().withBroker(broker, (b) =>
        b.include(
          subscriber(orders, async (o) => {
            started.add();
            if (wait) await held.promise;
            handled.push(`${name}:${o.id}`);
            return { orderId: o.id };
          })
            .publishTo(invoices)
            .exactlyOnce(),
        ),
      );
    const old = make('old', true);
    await old.start();
    await broker.publish('orders', { id: 'o-1' });
    await started.reach(1);
    // A newer holder of partition 0 (a process that took it while this one stalled) fences it.
    const newer = broker.transactions('billing', 'orders');
    expect(await newer.open(0)).toBe(0);
    held.open();
    await old.idle();
    expect(handled).toEqual(['old:o-1']);
    expect(broker.values('invoices')).toEqual([]);
    expect(broker.committed('billing', 'orders')).toEqual([0]);
    await newer.commit(0, 1, [{ topic: 'invoices', value: { orderId: 'o-1' } }]);
    expect(broker.values('invoices')).toEqual([{ orderId: 'o-1' }]);
    await old.stop();
  });

  it('a restarted app skips what was committed, and publishes each output once across restarts', async () => {
    const broker = new MemoryBroker({ partitions: 2 });
    const make = (): App =>
      appOn().withBroker(broker, (b) =>
        b.include(
          subscriber(orders, (o) => ({ orderId: o.id }))
            .publishTo(invoices)
            .workersByKey(4)
            .exactlyOnce(),
        ),
      );
    for (let round = 0; round < 3; round++) {
      const app = make();
      await app.start();
      for (let i = 0; i < 10; i++) await broker.publish('orders', { id: `${round}-${i}` }, { key: `k${i % 3}` });
      await app.idle();
      await app.stop();
    }
    const ids = broker.values<{ orderId: string }>('invoices').map((i) => i.orderId);
    expect(ids).toHaveLength(30);
    expect(new Set(ids).size).toBe(30);
  });

  it('refuses a publish made after its attempt ended', async () => {
    const broker = new MemoryBroker();
    let late: Promise<unknown> | undefined;
    const app = appOn().withBroker(broker, (b) =>
      b.include(
        subscriber(orders, (o, ctx) => {
          // Not awaited: it runs once the attempt has ended.
          late = new Promise((resolve) => setImmediate(resolve))
            .then(() => ctx.publish('invoices', o))
            .then(
              () => 'published',
              (error: unknown) => error,
            );
        }).exactlyOnce(),
      ),
    );
    await app.start();
    await broker.publish('orders', { id: 'o-1' });
    await app.idle();
    expect(await late).toMatchObject({ code: 'APP_STATE', message: /after its attempt ended/ });
    expect(broker.values('invoices')).toEqual([]);
    await app.stop();
  });

  it('refuses to start on a broker without transactions, with batch, and paced on a store that cannot publish', async () => {
    const memory = new MemoryBroker();
    const bare: Broker = {
      kind: 'bare',
      connect: () => memory.connect(),
      publish: (t, v, o) => memory.publish(t, v, o),
      consume: (r) => memory.consume(r),
      close: () => memory.close(),
    };
    const app = appOn().withBroker(bare, (b) => b.include(subscriber(orders, () => {}).exactlyOnce()));
    await expect(app.start()).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: /exactlyOnce needs a broker with transactions; bare has none/,
    });
    expectError(
      () =>
        subscriber('orders', () => {})
          .batch({ max: 10 })
          .exactlyOnce()
          .build(),
      'CONFIG_INVALID',
      /exactlyOnce must be left out with batch/,
    );
    // Paced, a run's publishes go with its done record: only a store that publishes (kafkaStore) can take them.
    const paced = new App({ name: 'billing', logger: silentLogger, store: memoryStore() }).withBroker(memory, (b) =>
      b.include(
        subscriber('orders', () => {})
          .pace({ debounce: '1s' })
          .exactlyOnce(),
      ),
    );
    await expect(paced.start()).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: /exactlyOnce with pace needs a store that publishes a run's messages with its done record/,
    });
  });
});
