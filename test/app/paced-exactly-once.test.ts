/**
 * A paced subscriber marked `exactlyOnce`, on the memory broker and a memory store that publishes to it
 * (`publishesTo`): a run's publishes go out with its `done` record, in the store's commit, so that a crash
 * between the two publishes nothing, and the run's next life publishes once. The Kafka store does the same
 * in its shard's transaction: test/kafka/paced-publishing-crash.test.ts kills it with SIGKILL.
 */
import { describe, expect, it } from 'vitest';
import { App, MemoryBroker, subscriber } from '../../src/index.js';
import { ManualClock, memoryStore, silentLogger, type MemoryStore } from '../../src/testing.js';

interface Invoice {
  readonly run: string;
  readonly ids: readonly number[];
  readonly ghost?: boolean;
}

const T0 = Date.UTC(2026, 0, 1);

/** An app whose paced subscriber publishes an invoice per run of 2 orders of a key; `body` runs first. */
function appOn(broker: MemoryBroker, store: MemoryStore, clock: ManualClock, exactlyOnce: boolean, body = () => {}) {
  const runs: string[] = [];
  const paced = subscriber('orders', async (orders: { id: number }[], ctx) => {
    runs.push(ctx.run!.id);
    await ctx.publish('invoices', { run: ctx.run!.id, ids: orders.map((o) => o.id) });
    body();
  }).pace({ batch: { max: 2, wait: '1 hour' } });
  const app = new App({ name: 'billing', logger: silentLogger, clock, store, shutdownTimeoutMs: 1_000 }).withBroker(
    broker,
    (b) => b.include(exactlyOnce ? paced.exactlyOnce() : paced),
  );
  return { app, runs };
}

describe('exactlyOnce on a paced subscriber', () => {
  it("publishes a run's messages with its done record: none from a failed attempt", async () => {
    const broker = new MemoryBroker();
    const clock = new ManualClock(T0);
    let attempts = 0;
    const paced = subscriber('orders', async (orders: { id: number }[], ctx) => {
      const run = ctx.run!.id;
      if (++attempts === 1) {
        await ctx.publish('invoices', { run, ids: [], ghost: true });
        throw new Error('the first attempt fails after publishing');
      }
      await ctx.publish('invoices', { run, ids: orders.map((o) => o.id) });
    })
      .pace({ batch: { max: 2, wait: '1 hour' } })
      .retry({ attempts: 2, backoff: { initialMs: 0 } })
      .exactlyOnce();
    const store = memoryStore({ shards: 1, publishesTo: broker });
    const app = new App({ name: 'billing', logger: silentLogger, clock, store }).withBroker(broker, (b) =>
      b.include(paced),
    );
    await app.start();
    await broker.publish('orders', { id: 1 }, { key: 'k' });
    await broker.publish('orders', { id: 2 }, { key: 'k' });
    await app.idle();
    const invoices = broker.values<Invoice>('invoices');
    expect(invoices).toHaveLength(1);
    expect(invoices[0]).toMatchObject({ ids: [1, 2] });
    expect(invoices[0]!.ghost).toBeUndefined();
    await app.stop();
  });

  it.each([
    [true, 'publishes once: nothing before the crash, the same run after it', 1],
    [false, '(at least once, without it) publishes the run twice', 2],
  ])('exactlyOnce %s: a crash before the done record is durable %s', async (exactlyOnce, _what, published) => {
    const broker = new MemoryBroker();
    let store = memoryStore({ shards: 1, publishesTo: broker });
    const clock = new ManualClock(T0);
    // The crash comes in the turn after the handler returns, before the store's commit of the done record.
    const one = appOn(broker, store, clock, exactlyOnce, () => void setImmediate(() => (store = store.crash())));
    await one.app.start();
    await broker.publish('orders', { id: 1 }, { key: 'k' });
    await broker.publish('orders', { id: 2 }, { key: 'k' });
    while (one.runs.length === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    await new Promise<void>((resolve) => setImmediate(resolve));
    const stopping = one.app.stop();
    await clock.advance(1_000); // the shutdown timeout: the done record of the lost store never resolves
    await stopping;
    expect(broker.values('invoices')).toHaveLength(exactlyOnce ? 0 : 1);

    const two = appOn(broker, store, clock, exactlyOnce);
    await two.app.start();
    await two.app.idle();
    await two.app.stop();
    expect(two.runs).toEqual(one.runs); // the run ran again, under its ID
    const invoices = broker.values<Invoice>('invoices');
    expect(invoices).toHaveLength(published);
    expect(invoices.every((i) => i.run === one.runs[0])).toBe(true);
  });

  it('dead-letters a run whose publishes the broker refuses, records it done, and goes on', async () => {
    const broker = new MemoryBroker();
    const clock = new ManualClock(T0);
    const runs: string[] = [];
    const paced = subscriber('orders', async (orders: { id: number }[], ctx) => {
      runs.push(ctx.run!.key);
      const partition = ctx.run!.key === 'bad' ? 99 : undefined; // the memory broker has 1 partition
      await ctx.publish('invoices', { run: ctx.run!.id, ids: orders.map((o) => o.id) }, { partition });
    })
      .pace({ batch: { max: 1, wait: '1 hour' } })
      .exactlyOnce();
    const store = memoryStore({ shards: 1, publishesTo: broker });
    const app = new App({ name: 'billing', logger: silentLogger, clock, store }).withBroker(broker, (b) =>
      b.include(paced),
    );
    await app.start();
    await broker.publish('orders', { id: 1 }, { key: 'bad' });
    await broker.publish('orders', { id: 2 }, { key: 'good' });
    await app.idle();
    await app.stop();
    expect(broker.values('invoices')).toMatchObject([{ ids: [2] }]);
    expect(broker.values('orders.dlq')).toEqual([[{ id: 1 }]]); // a run's message: its events
    expect(runs).toEqual(['bad', 'good']);
    // Recorded done: a restart does not run it again.
    const again = new App({ name: 'billing', logger: silentLogger, clock, store: store.crash() }).withBroker(
      broker,
      (b) => b.include(paced),
    );
    await again.start();
    await again.idle();
    await again.stop();
    expect(runs).toEqual(['bad', 'good']);
  });
});
