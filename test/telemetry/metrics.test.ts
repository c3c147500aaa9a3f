import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { App, HandlerOutcome, MemoryBroker, fileStore, subscriber, type Context } from '../../src/index.js';
import { ManualClock, memoryStore, silentLogger } from '../../src/testing.js';
import { Counter, Gate } from '../helpers.js';
import { expectError } from '../expect-error.js';
import { valueOf } from './metrics-text.js';

const apps: App[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.stop()));
});

function appOf(options: Partial<ConstructorParameters<typeof App>[0]> = {}): App {
  const app = new App({ name: 'metrics', logger: silentLogger, ...options });
  apps.push(app);
  return app;
}

const orders = { subscriber: 'orders', topic: 'orders' };

describe('metrics in a prom-client registry', () => {
  it('counts attempts by outcome, and decode failures, with each attempt timed on the app clock', async () => {
    const clock = new ManualClock(0);
    const registry = new Registry();
    const broker = new MemoryBroker();
    const failedOnce = new Set<number>();
    const gate = new Gate();
    const started = new Counter();
    const handler = async (v: { n: number }): Promise<HandlerOutcome | void> => {
      started.add();
      if (v.n === 0) await gate.promise; // held while the clock moves 300 ms
      if (v.n === 3) return HandlerOutcome.reject('no');
      if (v.n % 2 === 1 && !failedOnce.has(v.n)) {
        failedOnce.add(v.n);
        throw new Error('once');
      }
    };
    const sub = subscriber('orders', handler)
      .name('orders')
      .retry({ attempts: 2, backoff: { initialMs: 10, maxMs: 10 } });
    const app = appOf({ clock, metrics: { registry } }).withBroker(broker, (b) => b.include(sub.build()));
    await app.start();
    for (let n = 0; n < 6; n++) await broker.publish('orders', { n });
    await broker.publish('orders', 'not json {');
    await started.reach(1);
    await clock.advance(300);
    gate.open();
    for (let i = 0; i < 20 && started.value < 8; i++) await clock.advance(10); // the retries' backoff
    await app.idle();
    const text = await registry.metrics();
    const handled = (outcome: string) => valueOf(text, 'sluice_handled_total', { ...orders, outcome });
    // n = 0..5: 1 and 5 fail once then ack, 3 rejects (odd, but it rejects before it could throw)
    expect([handled('ack'), handled('retry'), handled('reject'), handled('dead_letter')]).toEqual([5, 2, 1, 0]);
    expect(handled('decode_failed')).toBe(1);
    expect(handled('timeout')).toBe(0);
    const bucket = (le: string) => valueOf(text, 'sluice_handler_duration_seconds_bucket', { ...orders, le });
    expect(valueOf(text, 'sluice_handler_duration_seconds_count', orders)).toBe(8);
    expect(bucket('0.25')).toBe(7); // every attempt but the held one took no time on the manual clock
    expect(bucket('0.5')).toBe(8);
    expect(valueOf(text, 'sluice_handler_duration_seconds_sum', orders)).toBeCloseTo(0.3);
    expect(valueOf(text, 'sluice_dead_letters_total', { ...orders, result: 'published' })).toBe(2);
    expect(valueOf(text, 'sluice_rebalances_total', orders)).toBe(1);
  });

  it('reads in flight, waiting for a worker or a retry, uncommitted and lag per partition when scraped', async () => {
    const clock = new ManualClock(0);
    const registry = new Registry();
    const broker = new MemoryBroker({ partitions: 2 });
    const gate = new Gate();
    const started = new Counter();
    const handler = async (v: { n: number }, ctx: Context): Promise<void> => {
      started.add();
      if (v.n === 9 && ctx.message.attempt === 1) throw new Error('retry me later');
      await gate.promise;
    };
    const sub = subscriber('orders', handler)
      .name('orders')
      .workers(2)
      .retry({ attempts: 3, backoff: { initialMs: 60_000, maxMs: 60_000 } });
    const app = appOf({ clock, metrics: { registry } }).withBroker(broker, (b) => b.include(sub.build()));
    await app.start();
    await broker.publish('orders', { n: 9 }, { partition: 0 }); // fails: waits a minute for its retry
    await started.reach(1);
    for (let n = 0; n < 4; n++) await broker.publish('orders', { n }, { partition: 1 }); // two run, two wait
    await started.reach(3);
    const text = await registry.metrics();
    expect(valueOf(text, 'sluice_in_flight', orders)).toBe(2);
    expect(valueOf(text, 'sluice_waiting_for_retry', orders)).toBe(1);
    expect(valueOf(text, 'sluice_waiting_for_worker', orders)).toBe(0); // the rest were not read: no room
    expect(valueOf(text, 'sluice_uncommitted', { ...orders, partition: 0 })).toBe(1);
    expect(valueOf(text, 'sluice_uncommitted', { ...orders, partition: 1 })).toBe(2);
    expect(valueOf(text, 'sluice_consumer_lag', { ...orders, partition: 0 })).toBe(1);
    expect(valueOf(text, 'sluice_consumer_lag', { ...orders, partition: 1 })).toBe(4);
    expect(valueOf(text, 'sluice_assigned_partitions', orders)).toBe(2);
    gate.open();
    await clock.advance(60_000);
    await app.idle();
    const after = await registry.metrics();
    expect(valueOf(after, 'sluice_in_flight', orders)).toBe(0);
    expect(valueOf(after, 'sluice_consumer_lag', { ...orders, partition: 1 })).toBe(0);
    expect(valueOf(after, 'sluice_handled_total', { ...orders, outcome: 'dead_letter' })).toBe(0);
  });

  it('answers a scrape and app.health() within a second of the app clock while the broker does not tell the lag, from the last count, marked stale', async () => {
    const clock = new ManualClock(0);
    const registry = new Registry();
    let down = false;
    /** A memory broker whose consumers stop answering for their lag while it is `down` (an outage). */
    class Outage extends MemoryBroker {
      override async consume(...args: Parameters<MemoryBroker['consume']>) {
        const consumer = await super.consume(...args);
        const lags = consumer.partitionLags!.bind(consumer);
        return Object.assign(consumer, { partitionLags: () => (down ? new Promise<never>(() => {}) : lags()) });
      }
    }
    const broker = new Outage();
    const gate = new Gate();
    const app = appOf({ clock, metrics: { registry } }).withBroker(broker, (b) =>
      b.include(
        subscriber('orders', () => gate.promise)
          .name('orders')
          .build(),
      ),
    );
    await app.start();
    for (let n = 0; n < 3; n++) await broker.publish('orders', { n });
    const before = await registry.metrics();
    expect(valueOf(before, 'sluice_consumer_lag', { ...orders, partition: 0 })).toBe(3);
    expect(valueOf(before, 'sluice_consumer_lag_stale', orders)).toBe(0);
    down = true;
    const scrape = registry.metrics();
    const health = app.health();
    await clock.advance(999);
    let answered = false;
    void scrape.then(() => (answered = true));
    await clock.advance(0);
    expect(answered).toBe(false); // still within the bound
    await clock.advance(1);
    const during = await scrape;
    expect(valueOf(during, 'sluice_consumer_lag', { ...orders, partition: 0 })).toBe(3); // the last count
    expect(valueOf(during, 'sluice_consumer_lag_stale', orders)).toBe(1);
    expect((await health).subscribers[0]).toMatchObject({ lag: 3, lagStale: true });
    down = false;
    gate.open();
    await app.idle();
  });

  it('counts an attempt that ran past timeoutMs as a timeout', async () => {
    const clock = new ManualClock(0);
    const registry = new Registry();
    const broker = new MemoryBroker();
    const started = new Counter();
    const hung = subscriber('orders', async (_v: unknown, ctx) => {
      started.add();
      if (ctx.message.attempt === 1) await new Promise(() => {}); // never ends
    })
      .name('orders')
      .timeout(1_000);
    const app = appOf({ clock, metrics: { registry } }).withBroker(broker, (b) => b.include(hung.build()));
    await app.start();
    await broker.publish('orders', { n: 1 });
    await started.reach(1);
    for (let i = 0; i < 40 && started.value < 2; i++) await clock.advance(250);
    await app.idle();
    const text = await registry.metrics();
    expect(valueOf(text, 'sluice_handled_total', { ...orders, outcome: 'timeout' })).toBe(1);
    expect(valueOf(text, 'sluice_handled_total', { ...orders, outcome: 'ack' })).toBe(1);
  });

  it("reads the pace stage's open windows per subscriber and shard, and times the file store's group commits", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sluice-metrics-'));
    try {
      const clock = new ManualClock(1_000_000);
      const registry = new Registry();
      const paced = (name: string) =>
        subscriber(name, async () => {})
          .name(name)
          .pace({ debounce: 5_000 })
          .build();
      const store = fileStore({ dir, shards: 2 });
      const app = appOf({ clock, store, metrics: { registry } });
      app.withBroker(new MemoryBroker(), (b) => b.include(paced('rows'), paced('cells')));
      await app.start();
      for (const key of ['a', 'b', 'c']) await app.send('rows', { key, event: { key } });
      for (const key of ['a', 'b']) await app.send('cells', { key, event: { key } });
      const text = await registry.metrics();
      const open = (t: string, name: string) =>
        [0, 1].map((shard) => valueOf(t, 'sluice_pace_open_windows', { subscriber: name, shard }) ?? 0);
      expect(open(text, 'rows').reduce((a, b) => a + b)).toBe(3);
      expect(open(text, 'cells').reduce((a, b) => a + b)).toBe(2);
      expect(valueOf(text, 'sluice_pace_waiting_starts', { subscriber: 'rows', shard: 0 }) ?? 0).toBe(0);
      expect(valueOf(text, 'sluice_pace_parked_keys', { shard: 0 })).toBe(0);
      const commits = [0, 1].map((shard) => valueOf(text, 'sluice_store_fsync_seconds_count', { shard }) ?? 0);
      expect(commits[0]! + commits[1]!).toBeGreaterThanOrEqual(1);
      const records = [0, 1].map((shard) => valueOf(text, 'sluice_store_records_per_fsync_sum', { shard }) ?? 0);
      expect(records[0]! + records[1]!).toBe(5);
      await clock.advance(5_000); // the windows close: their runs go
      await app.idle();
      const after = await registry.metrics();
      expect([...open(after, 'rows'), ...open(after, 'cells')]).toEqual([0, 0, 0, 0]);
      await app.stop();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a registry that has the metrics of another app already, naming it', async () => {
    const registry = new Registry();
    const broker = new MemoryBroker();
    const sub = subscriber('orders', async () => {})
      .name('orders')
      .build();
    await appOf({ metrics: { registry } })
      .withBroker(broker, (b) => b.include(sub))
      .start();
    const second = appOf({ name: 'second', metrics: { registry } }).withBroker(broker, (b) => b.include(sub));
    await expect(second.start()).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    await expect(second.start()).rejects.toThrow(/one app per registry/);
  });

  it('keeps counting in a memory store app with pace, and paced drops count as dropped', async () => {
    const clock = new ManualClock(0);
    const registry = new Registry();
    const broker = new MemoryBroker();
    const paced = subscriber('clicks', async () => {})
      .name('clicks')
      .key((m: { value: { user: string } }) => m.value.user)
      .pace({ drop: { max: 1, per: 60_000 } });
    const app = appOf({ clock, store: memoryStore(), metrics: { registry } });
    app.withBroker(broker, (b) => b.include(paced.build()));
    await app.start();
    for (let i = 0; i < 3; i++) await broker.publish('clicks', { user: 'u1' });
    await app.idle();
    const text = await registry.metrics();
    const handled = (outcome: string) =>
      valueOf(text, 'sluice_handled_total', { subscriber: 'clicks', topic: 'clicks', outcome });
    expect([handled('ack'), handled('dropped')]).toEqual([1, 2]);
  });
});

describe('metrics, http and health settings', () => {
  const bad = (options: Record<string, unknown>, message: RegExp) =>
    expectError(() => new App({ name: 'x', ...options }), 'CONFIG_INVALID', message);

  it('throws CONFIG_INVALID naming the field and the value', () => {
    bad({ http: { port: 70_000 } }, /http\.port must be an integer from 0 to 65535, got 70000/);
    bad({ http: { port: 8080, hots: 'x' } }, /http\.hots must be a known setting/);
    bad({ http: { port: 1.5 } }, /http\.port must be .* got 1\.5/);
    bad({ http: { port: 80, host: '' } }, /http\.host must be a non-empty string/);
    bad({ health: { maxPollGapMs: -1 } }, /health\.maxPollGapMs must be a finite number > 0, got -1/);
    bad({ health: { maxInFlightMs: Infinity } }, /health\.maxInFlightMs must be a finite number > 0/);
    bad({ metrics: { registry: {} } }, /metrics\.registry must be a prom-client Registry/);
    bad({ metrics: 'yes' }, /metrics must be true or an object/);
    bad(
      { metrics: true },
      /metrics must be given a registry, or served by the app \(with http: \{ port \}\), got true/,
    );
  });

  it('takes a registry alone, or metrics served by the http server', () => {
    expect(() => new App({ name: 'x', metrics: { registry: new Registry() } })).not.toThrow();
    expect(() => new App({ name: 'x', metrics: true, http: { port: 0 } })).not.toThrow();
    expect(() => new App({ name: 'x', http: { port: 9464, host: '127.0.0.1' }, health: {} })).not.toThrow();
  });
});
