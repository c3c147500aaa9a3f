/**
 * Dead letters the broker refuses for good (PUBLISH_REFUSED), on the memory broker's `maxMessageBytes`: the
 * partition never stops on them. The Kafka suite checks the same against a real broker's limits.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  App,
  HandlerOutcome,
  ManualClock,
  MemoryBroker,
  STRIPPED_HEADER,
  memoryLogger,
  settle,
  subscriber,
  type LogRecord,
  type PublishOptions,
} from '../../src/index.js';
import { Counter } from '../helpers.js';

describe('a dead letter the broker refuses', () => {
  const apps: App[] = [];
  afterEach(async () => void (await Promise.all(apps.splice(0).map((a) => a.stop()))));

  /** A broker whose dead-letter topic is unreachable for its first `failures` publishes. */
  class Flaky extends MemoryBroker {
    readonly tries = new Counter();
    constructor(private failures: number) {
      super();
    }
    override async publish(topic: string, value: unknown, options?: PublishOptions): Promise<void> {
      if (topic.endsWith('.dlq')) {
        this.tries.add();
        if (this.failures-- > 0) throw new Error('broker unreachable');
      }
      return super.publish(topic, value, options);
    }
  }

  const start = async (broker: MemoryBroker, records: LogRecord[], clock = new ManualClock()) => {
    const handled: string[] = [];
    const app = new App({ name: 'refused', clock, logger: memoryLogger(records), shutdownTimeoutMs: 1_000 }).withBroker(
      broker,
      (b) =>
        b.include(
          subscriber('orders', (raw: Uint8Array) => {
            const text = Buffer.from(raw).toString();
            if (text.startsWith('bad')) return HandlerOutcome.reject('not ours');
            handled.push(text);
          })
            .name('orders')
            .decode((raw) => raw)
            .build(),
        ),
    );
    apps.push(app);
    await app.start();
    return { app, handled };
  };

  it('is sent stripped of its value and headers, counted, and the partition goes on', async () => {
    const broker = new MemoryBroker({ maxMessageBytes: 1_000 });
    const records: LogRecord[] = [];
    const { app, handled } = await start(broker, records);
    // Fits the limit alone; Sluice's headers push its dead letter over it.
    await broker.publish('orders', `bad${'x'.repeat(900)}`, { key: 'k1', headers: { trace: 't'.repeat(50) } });
    await broker.publish('orders', 'next', { key: 'k1' });
    await app.idle();

    expect(handled).toEqual(['next']);
    const [dead, ...more] = broker.messages('orders.dlq');
    expect(more).toEqual([]);
    expect(dead!.value.byteLength).toBe(0);
    expect(dead!.key).toBe('k1');
    expect(dead!.headers).toMatchObject({
      'x-sluice-error': 'not ours',
      'x-sluice-original-topic': 'orders',
      'x-sluice-original-partition': '0',
      'x-sluice-original-offset': '0',
      'x-sluice-original-value-bytes': '903',
      [STRIPPED_HEADER]: expect.stringMatching(/maxMessageBytes/),
    });
    expect(dead!.headers.trace).toBeUndefined();
    expect(app.deadLetters()).toEqual({ orders: { published: 0, stripped: 1, lost: 0, dropped: 0 } });
    expect(records.some((r) => r.level === 'error' && /refused/.test(r.message) && r.fields.id === 'orders/0/0')).toBe(
      true,
    );
    expect(broker.committed('refused', 'orders')).toEqual([2]);
  });

  it('refused even stripped, is logged as an error with its coordinates, counted as lost, and committed', async () => {
    const broker = new MemoryBroker({ maxMessageBytes: 100 }); // too small for any dead letter's headers
    const records: LogRecord[] = [];
    const { app, handled } = await start(broker, records);
    await broker.publish('orders', 'bad', { key: 'k1' });
    await broker.publish('orders', 'next', { key: 'k1' });
    await app.idle();

    expect(handled).toEqual(['next']);
    expect(broker.messages('orders.dlq')).toEqual([]);
    expect(app.deadLetters()).toEqual({ orders: { published: 0, stripped: 0, lost: 1, dropped: 0 } });
    const lost = records.find((r) => r.level === 'error' && /lost/.test(r.message));
    expect(lost?.fields).toMatchObject({
      subscriber: 'orders',
      topic: 'orders',
      partition: 0,
      offset: 0,
      deadLetterTopic: 'orders.dlq',
      reason: 'not ours',
    });
    expect(broker.committed('refused', 'orders')).toEqual([2]);
  });

  it('whole when it fits: counted as published', async () => {
    const broker = new MemoryBroker({ maxMessageBytes: 10_000 });
    const { app } = await start(broker, []);
    await broker.publish('orders', 'bad', { key: 'k1' });
    await app.idle();
    expect(broker.messages('orders.dlq').map((m) => Buffer.from(m.value).toString())).toEqual(['bad']);
    expect(app.deadLetters()).toEqual({ orders: { published: 1, stripped: 0, lost: 0, dropped: 0 } });
  });

  it('that may pass later (any other error) is retried with backoff, and committed only once published', async () => {
    const broker = new Flaky(2);
    const clock = new ManualClock();
    const records: LogRecord[] = [];
    const { app, handled } = await start(broker, records, clock);
    await broker.publish('orders', 'bad');
    await broker.publish('orders', 'next');
    await broker.tries.reach(1);
    expect(broker.committed('refused', 'orders')).toEqual([0]); // the dead letter is not out: nothing committed
    await clock.advance(100);
    await broker.tries.reach(2);
    await clock.advance(200);
    await app.idle();
    expect(broker.tries.value).toBe(3);
    expect(broker.values('orders.dlq')).toEqual(['bad']);
    expect(handled).toEqual(['next']);
    expect(records.filter((r) => r.level === 'error' && r.message === 'dead-letter publish failed')).toHaveLength(2);
    expect(app.deadLetters()).toEqual({ orders: { published: 1, stripped: 0, lost: 0, dropped: 0 } });
    await app.stop();
    expect(broker.committed('refused', 'orders')).toEqual([2]);
  });

  it("that may pass later holds its key until published: the key's next message waits, another key's runs", async () => {
    const broker = new Flaky(1);
    const clock = new ManualClock();
    const handled: string[] = [];
    const app = new App({ name: 'lanes', clock, logger: memoryLogger(), shutdownTimeoutMs: 1_000 }).withBroker(
      broker,
      (b) =>
        b.include(
          subscriber('orders', (raw: Uint8Array) => {
            const text = Buffer.from(raw).toString();
            if (text.startsWith('bad')) return HandlerOutcome.reject('not ours');
            handled.push(text);
          })
            .name('orders')
            .decode((raw) => raw)
            .workersByKey(2)
            .build(),
        ),
    );
    apps.push(app);
    await app.start();
    await broker.publish('orders', 'bad', { key: 'k1' });
    await broker.publish('orders', 'k2', { key: 'k2' });
    await broker.publish('orders', 'k1 next', { key: 'k1' });
    await broker.tries.reach(1); // the dead letter's first publish failed; the next try is 100 ms on
    await settle();
    expect(handled).toEqual(['k2']);
    expect(broker.readCount('lanes', 'orders')).toBe(3);
    expect(broker.values('orders.dlq')).toEqual([]);
    await clock.advance(100);
    await app.idle();
    expect(broker.values('orders.dlq')).toEqual(['bad']);
    expect(handled).toEqual(['k2', 'k1 next']);
  });

  it('maxMessageBytes must be a positive integer', () => {
    expect(() => new MemoryBroker({ maxMessageBytes: 0 })).toThrow(
      expect.objectContaining({
        code: 'CONFIG_INVALID',
        message: 'MemoryBroker: maxMessageBytes must be a positive integer, got 0',
      }),
    );
  });
});
