// Bad input a user can hand the app, each refused where it is given, with a SluiceError naming the field.
import { describe, expect, it } from 'vitest';
import {
  App,
  MAX_WORKERS,
  ManualClock,
  MemoryBroker,
  Router,
  memoryStore,
  silentLogger,
  subscriber,
  type Context,
} from '../../src/index.js';
import { expectError } from '../expect-error.js';
import { turns } from '../helpers.js';

const noop = async function noop() {};

describe('settings refused where they are given', () => {
  it(`workers over MAX_WORKERS (${MAX_WORKERS}) is WORKERS_INVALID, in a subscriber, a router and the app's defaults`, () => {
    expectError(
      () => subscriber('t', noop).workers(1e9).build(),
      'WORKERS_INVALID',
      /workers must be at most 10000, got 1000000000/,
    );
    expectError(() => new Router().workersByKey(MAX_WORKERS + 1), 'WORKERS_INVALID', /workers must be at most/);
    expectError(
      () => new App({ name: 'a', defaults: { workers: 1e9 } }),
      'WORKERS_INVALID',
      /App "a" defaults: workers must be at most/,
    );
    expect(subscriber('t', noop).workers(MAX_WORKERS).build().options.workers).toBe(MAX_WORKERS);
  });

  it('the App constructor refuses an unknown setting and a bad clock, store, logger, randomUUID or version', () => {
    expectError(
      () => new App({ name: 'a', shutdownTimeout: 5 } as never),
      'CONFIG_INVALID',
      /^App "a": shutdownTimeout must be a known setting \(.*\), got 5$/,
    );
    expectError(
      () => new App({ name: 'a', clock: {} as never }),
      'CONFIG_INVALID',
      /App "a": clock must be a Clock/,
      /got \{\}/,
    );
    expectError(() => new App({ name: 'a', clock: Date as never }), 'CONFIG_INVALID', /clock/);
    expectError(
      () => new App({ name: 'a', store: { shards: 0, open() {}, log() {}, close() {} } as never }),
      'CONFIG_INVALID',
      /App "a": store must be a Store/,
    );
    expectError(() => new App({ name: 'a', store: 'dir' as never }), 'CONFIG_INVALID', /store/, /got "dir"/);
    expectError(
      () => new App({ name: 'a', logger: console.log as never }),
      'CONFIG_INVALID',
      /logger must be a Logger/,
    );
    expectError(
      () => new App({ name: 'a', randomUUID: 'x' as never }),
      'CONFIG_INVALID',
      /randomUUID must be a function/,
      /got "x"/,
    );
    expectError(() => new App({ name: 'a', version: 2 as never }), 'CONFIG_INVALID', /version must be a string, got 2/);
    expectError(() => new App('a' as never), 'CONFIG_INVALID', /App: options must be an object, got "a"/);
    expect(
      () =>
        new App({
          name: 'a',
          clock: new ManualClock(),
          store: memoryStore(),
          logger: silentLogger,
          randomUUID: () => 'u',
        }),
    ).not.toThrow();
  });

  it('an app name that would put the default store outside .sluice is refused when a paced subscriber needs that store', () => {
    const paced = subscriber('t', noop).pace({ debounce: 10 }).build();
    for (const name of ['/abs', '../x', '..', '.', 'a/b', 'a\\b']) {
      const message = expectError(
        () => new App({ name }).withBroker(new MemoryBroker(), (b) => b.include(paced)),
        'CONFIG_INVALID',
        /name must be a plain folder name/,
      );
      expect(message).toContain(`got ${JSON.stringify(name)}`);
    }
    // With a store of its own, or without pace, the name is only a name (a consumer group).
    expect(() =>
      new App({ name: '../x', store: memoryStore() }).withBroker(new MemoryBroker(), (b) => b.include(paced)),
    ).not.toThrow();
    expect(() =>
      new App({ name: 'team/app' }).withBroker(new MemoryBroker(), (b) => b.include(subscriber('t', noop).build())),
    ).not.toThrow();
  });

  it('a subscriber name (given or default), group or topic with NUL is refused', () => {
    expectError(
      () => subscriber('t', noop).name('a\u0000b').build(),
      'CONFIG_INVALID',
      /name must be a non-empty string without NUL/,
    );
    expectError(
      () => subscriber('t', noop).group('g\u0000').build(),
      'CONFIG_INVALID',
      /group must be a non-empty string without NUL/,
    );
    const handler = Object.defineProperty(async () => {}, 'name', { value: 'x\u0000y' });
    expectError(
      () =>
        new App({ name: 'a', store: memoryStore() }).withBroker(new MemoryBroker(), (b) =>
          b.include(subscriber('t', handler).pace({ debounce: 10 }).build()),
        ),
      'CONFIG_INVALID',
      /name must be a non-empty string without NUL/,
    );
  });

  it('include() or a setting on a router after withBroker mounted it is refused, not ignored', () => {
    const inner = new Router({ prefix: 'billing.' });
    let outer: Router | undefined;
    new App({ name: 'a' }).withBroker(new MemoryBroker(), (b) => (outer = b).include(inner));
    expectError(
      () => outer!.include(subscriber('late', noop).build()),
      'APP_STATE',
      /include\(\) after App "a" mounted it/,
    );
    expectError(
      () => inner.include(subscriber('late', noop).build()),
      'APP_STATE',
      /router "billing\.": include\(\) after App "a" mounted it/,
    );
    expectError(() => inner.workers(4), 'APP_STATE', /a setting after App "a" mounted it/);
  });
});

describe('bad input at run time', () => {
  it('app.send refuses an event that is not JSON (a function, a symbol, undefined) with SEND_INVALID', async () => {
    const got: unknown[] = [];
    const clock = new ManualClock();
    const a = new App({ name: 'a', clock, store: memoryStore(), logger: silentLogger }).withBroker(
      new MemoryBroker(),
      (b) =>
        b.include(
          subscriber('t', (e: unknown) => void got.push(e))
            .name('paced')
            .pace({ debounce: 10 })
            .build(),
        ),
    );
    await a.start();
    // As a JavaScript caller sends them: TypeScript refuses each of these events at compile time.
    for (const event of [() => 1, undefined, Symbol('s')] as unknown[]) {
      await expect(a.send('paced', { key: 'k', event })).rejects.toMatchObject({ code: 'SEND_INVALID' });
    }
    await a.send('paced', { key: 'k', event: null });
    await clock.advance(10);
    await a.idle();
    expect(got).toEqual([null]);
    await a.stop();
  });

  it('a paced delivery whose decoder gives undefined is dead-lettered, not run with undefined', async () => {
    const broker = new MemoryBroker();
    const got: unknown[] = [];
    const clock = new ManualClock();
    const a = new App({ name: 'a', clock, store: memoryStore(), logger: silentLogger }).withBroker(broker, (b) =>
      b.include(
        subscriber('t', (e: unknown) => void got.push(e))
          .decode(() => undefined)
          .pace({ debounce: 10 })
          .build(),
      ),
    );
    await a.start();
    await broker.publish('t', { n: 1 });
    await a.idle();
    await clock.advance(10);
    await a.idle();
    expect(got).toEqual([]);
    expect(broker.values('t.dlq')).toEqual([{ n: 1 }]);
    await a.stop();
  });

  it('a key function that gives no string: a number is its text, a symbol or an object falls back to the message key', async () => {
    const broker = new MemoryBroker();
    const clock = new ManualClock();
    const runs: string[] = [];
    const keys = [7, Symbol('s'), { id: 1 }];
    let i = 0;
    const a = new App({ name: 'a', clock, store: memoryStore(), logger: silentLogger }).withBroker(broker, (b) =>
      b.include(
        subscriber('t', (_e: unknown, ctx: Context) => void runs.push(ctx.run!.key))
          .key(() => keys[i++] as never)
          .pace({ debounce: 10 })
          .build(),
      ),
    );
    await a.start();
    for (const k of ['m1', 'm2', 'm3']) await broker.publish('t', { k }, { key: k });
    await a.idle();
    await clock.advance(10);
    await a.idle();
    expect(runs.sort()).toEqual(['7', 'm2', 'm3']);
    expect(broker.committed('a', 't')).toEqual([3]);
    await a.stop();
  });

  it('MemoryBroker.publish refuses a partition that is not an integer partition of the topic, a key or headers that are neither text nor bytes', async () => {
    const broker = new MemoryBroker({ partitions: 2 });
    const a = new App({ name: 'a', clock: new ManualClock(), logger: silentLogger }).withBroker(broker, (b) =>
      b.include(subscriber('t', noop).build()),
    );
    await a.start();
    await expect(broker.publish('t', {}, { partition: '0' as never })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: 'MemoryBroker.publish("t"): partition must be an integer from 0 to 1, got "0"',
    });
    await expect(broker.publish('t', {}, { partition: 2 })).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    await expect(broker.publish('t', {}, { partition: 0.5 })).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    await expect(broker.publish('t', {}, { key: 5 as never })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringContaining('key must be a string or bytes, got 5'),
    });
    await expect(broker.publish('t', {}, { headers: { a: 1 } as never })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
    });
    expect(() => broker.publishNow('', {})).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
    expect(broker.messages('t')).toEqual([]);
    await broker.publish('t', {}, { partition: 1 });
    await a.idle(); // settles: nothing was stored where no consumer looks
    expect(broker.committed('a', 't')).toEqual([0, 1]);
    await a.stop();
  });

  it('a handler that awaits app.stop() (before its first await): the stop does not wait for itself, and the delivery is committed', async () => {
    const broker = new MemoryBroker();
    const steps: string[] = [];
    const a: App = new App({
      name: 'a',
      clock: new ManualClock(),
      logger: silentLogger,
      shutdownTimeoutMs: 60_000,
    }).withBroker(broker, (b) =>
      b.include(
        subscriber('t', async () => {
          await a.stop(); // the ManualClock never moves: a stop that waited for this handler would hang until its deadline
          steps.push('handler went on');
        }).build(),
      ),
    );
    const running = a.run();
    await broker.publish('t', {});
    await running; // run() resolves once the stop a handler called is done
    expect(steps).toEqual(['handler went on']);
    expect(broker.committed('a', 't')).toEqual([1]);
  });

  it('a handler that wants the app stopped calls void app.stop(): its delivery is committed, and the stop needs no deadline', async () => {
    const broker = new MemoryBroker();
    let stopped: Promise<void> | undefined;
    const a: App = new App({
      name: 'a',
      clock: new ManualClock(),
      logger: silentLogger,
      shutdownTimeoutMs: 60_000,
    }).withBroker(broker, (b) =>
      b.include(
        subscriber('t', async (_v: unknown, _ctx: Context) => {
          stopped = a.stop();
        }).build(),
      ),
    );
    await a.start();
    await broker.publish('t', {});
    while (stopped === undefined) await turns(1);
    await stopped; // the ManualClock never moves: a stop waiting for its deadline would hang here
    expect(broker.committed('a', 't')).toEqual([1]);
  });
});
