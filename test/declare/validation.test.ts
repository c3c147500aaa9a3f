import { describe, expect, it } from 'vitest';
import {
  App,
  MemoryBroker,
  Router,
  memoryStore,
  subscriber,
  silentLogger,
  type PaceOptions,
  type RetryOptions,
  type SubscriberOptions,
} from '../../src/index.js';
import { expectError } from '../expect-error.js';

const bill = async function bill() {};
const app = (defaults?: object) =>
  new App({ name: 'shop', logger: silentLogger, ...(defaults !== undefined ? { defaults } : {}) });
const compiled = (a: App) => Object.fromEntries(a.subscribers().map((s) => [s.name, s]));

describe("the app's defaults", () => {
  it('are checked when the App is constructed, naming the app, the field and the value', () => {
    expectError(
      () => app({ workers: 0 }),
      'WORKERS_INVALID',
      /^App "shop" defaults: workers must be a positive integer, got 0$/,
    );
    expectError(() => app({ timeoutMs: -5 }), 'CONFIG_INVALID', /App "shop" defaults: timeoutMs/, /got -5/);
    expectError(
      () => app({ retry: { attempts: 1.5 } }),
      'CONFIG_INVALID',
      /App "shop" defaults: retry\.attempts/,
      /got 1\.5/,
    );
    expectError(
      () => app({ retry: { backoff: { initialMs: 10, maxMs: 1 } } }),
      'CONFIG_INVALID',
      /App "shop" defaults: retry\.backoff\.maxMs must be at least initialMs \(10\), got 1/,
    );
    expectError(() => app({ decode: 'json' }), 'CONFIG_INVALID', /App "shop" defaults: decode/, /got "json"/);
    expectError(() => app(null as never), 'CONFIG_INVALID', /App "shop" defaults must be an object, got null/);
  });

  it('refuse unknown keys, and settings a router could not give either, like unknown subscriber options', () => {
    expectError(
      () => app({ wrokers: 2 }),
      'CONFIG_INVALID',
      /App "shop" defaults: wrokers must be a setting given as a default \(workers, byKey, group, retry, deadLetter, timeoutMs, decode\), got 2/,
    );
    expectError(
      () => app({ pace: { debounce: '1s' } }),
      'CONFIG_INVALID',
      /App "shop" defaults: pace/,
      /got \{"debounce":"1s"\}/,
    );
    expectError(() => app({ name: 'x' }), 'CONFIG_INVALID', /App "shop" defaults: name/, /got "x"/);
  });

  it('are copied: changing the object after construction changes nothing', () => {
    const defaults = { workers: 3, retry: { attempts: 2, backoff: { initialMs: 5 } } };
    const a = app(defaults);
    defaults.workers = 0;
    defaults.retry.attempts = 0;
    defaults.retry.backoff.initialMs = -1;
    const c = compiled(a.withBroker(new MemoryBroker(), (b) => b.include(subscriber('orders', bill)))).bill!;
    expect(c.workers).toBe(3);
    expect(c.retry).toEqual({ attempts: 2, initialMs: 5, maxMs: 30_000 });
  });

  it('merge with routers and the subscriber, and the merged result is checked at mount, naming the subscriber', () => {
    // Each layer is valid alone; together the backoff runs backwards.
    const a = app({ retry: { backoff: { maxMs: 1_000 } } });
    expectError(
      () =>
        a.withBroker(new MemoryBroker(), (b) =>
          b.include(subscriber('orders', bill).retry({ backoff: { initialMs: 5_000 } })),
        ),
      'CONFIG_INVALID',
      /subscriber "bill": retry\.backoff\.maxMs must be at least initialMs \(5000\), got 1000/,
    );
    const r = new Router({ byKey: true }).include(subscriber('orders', bill).batch({ max: 10 }));
    expectError(
      () => app().withBroker(new MemoryBroker(), (b) => b.include(r)),
      'CONFIG_INVALID',
      /subscriber "bill": batch must be left out when byKey is set/,
      /got \{"max":10\}/,
    );
    const ok = compiled(
      app({ workers: 2, group: 'g' }).withBroker(new MemoryBroker(), (b) =>
        b.include(new Router({ workers: 5 }).include(subscriber('orders', bill))),
      ),
    ).bill!;
    expect(ok).toMatchObject({ workers: 5, group: 'g' });
  });
});

describe('nested settings', () => {
  const build = (options: SubscriberOptions) => () => {
    let b = subscriber('orders', bill);
    if (options.retry !== undefined) b = b.retry(options.retry);
    if (options.batch !== undefined) b = b.batch(options.batch);
    if (options.pace !== undefined) b = b.pace(options.pace);
    return b.build();
  };
  const retry = (r: unknown) => build({ retry: r as RetryOptions });
  const pace = (p: unknown) => build({ pace: p as PaceOptions });

  it.each<[string, () => unknown, ...RegExp[]]>([
    ['retry null', retry(null), /retry must be an object \{ attempts\?, backoff\? \}, got null/],
    ['retry an array', retry([3]), /retry must be an object/, /got \[3\]/],
    [
      'retry.backoff null',
      retry({ backoff: null }),
      /retry\.backoff must be an object \{ initialMs\?, maxMs\? \}, got null/,
    ],
    ['retry.backoff a string', retry({ backoff: 'x' }), /retry\.backoff must be an object/, /got "x"/],
    ['retry.backoff a number', retry({ backoff: 100 }), /retry\.backoff must be an object/, /got 100/],
    ['batch null', build({ batch: null as never }), /batch must be an object \{ max \}, got null/],
    ['pace.batch null', pace({ batch: null }), /pace\.batch must be an object \{ max\?, wait\? \}, got null/],
    ['pace.batch a number', pace({ batch: 5 }), /pace\.batch must be an object/, /got 5/],
    ['pace.drop null', pace({ drop: null }), /pace\.drop must be an object \{ max, per \}, got null/],
    ['pace.drop a string', pace({ drop: '1/s' }), /pace\.drop must be an object/, /got "1\/s"/],
    ['pace an array', pace([]), /pace must be an object, got \[\]/],
  ])('%s throws CONFIG_INVALID naming the subscriber, the field and the value', (_name, fn, ...parts) => {
    expectError(fn, 'CONFIG_INVALID', /^subscriber "bill": /, ...parts);
  });

  it.each<[string, () => unknown, ...RegExp[]]>([
    [
      'retry.backof',
      retry({ attempts: 3, backof: { initialMs: 5 } }),
      /retry\.backof must be a known field of retry \(attempts, backoff\), got \{"initialMs":5\}/,
    ],
    ['retry.attempt', retry({ attempt: 3 }), /retry\.attempt must be a known field of retry/, /got 3/],
    [
      'retry.backoff.initial',
      retry({ backoff: { initial: 5 } }),
      /retry\.backoff\.initial must be a known field of retry\.backoff \(initialMs, maxMs\), got 5/,
    ],
    [
      'batch.wait',
      build({ batch: { max: 10, wait: '1s' } as never }),
      /batch\.wait must be a known field of batch \(max\), got "1s"/,
    ],
    [
      'pace.batch.wiat',
      pace({ batch: { max: 3, wiat: '1s' } }),
      /pace\.batch\.wiat must be a known field of pace\.batch \(max, wait\), got "1s"/,
    ],
    [
      'pace.debounce.maxwait',
      pace({ debounce: { window: '1s', maxwait: '1 minute' } }),
      /pace\.debounce\.maxwait must be a known field of pace\.debounce \(window, maxWait\), got "1 minute"/,
    ],
    [
      'pace.drop.every',
      pace({ drop: { max: 1, per: '1s', every: 2 } }),
      /pace\.drop\.every must be a known field of pace\.drop \(max, per\), got 2/,
    ],
  ])('a misspelled nested field (%s) is refused with CONFIG_INVALID', (_name, fn, ...parts) => {
    expectError(fn, 'CONFIG_INVALID', /^subscriber "bill": /, ...parts);
  });

  it('a misspelled pace part is PACE_UNKNOWN_PART, quoting its value', () => {
    expectError(
      pace({ debounse: '1s' }),
      'PACE_UNKNOWN_PART',
      /^subscriber "bill": pace\.debounse must be a pace part \(debounce, batch, perMinute, drop, order, turns, dedup\), got "1s"$/,
    );
  });

  it('are checked in routers and decorators too', () => {
    expectError(
      () => new Router({ prefix: 'eu.', retry: { backoff: null } as never }),
      'CONFIG_INVALID',
      /router "eu\.": retry\.backoff must be an object/,
      /got null/,
    );
    expectError(
      () => new Router().retry({ backof: {} } as never),
      'CONFIG_INVALID',
      /retry\.backof must be a known field/,
    );
    const decorate = subscriber('orders', { pace: { drop: null } } as never) as unknown as (
      target: object,
      key: string,
    ) => void;
    expectError(
      () => decorate({ constructor: { name: 'Shop' } }, 'bill'),
      'CONFIG_INVALID',
      /subscriber "Shop\.bill"/,
      /pace\.drop must be an object/,
      /got null/,
    );
  });
});

describe('frozen specs', () => {
  it('copy and freeze nested settings: changing the caller objects after build() and mount changes nothing', () => {
    const order = () => 1;
    const key = () => 'k';
    const retry = { attempts: 3, backoff: { initialMs: 10, maxMs: 100 } };
    const paceOptions = { debounce: { window: '1s', maxWait: '1 minute' }, drop: { max: 2, per: '1 hour' }, order };
    const spec = subscriber('orders', bill).key(key).retry(retry).pace(paceOptions).build();
    const batchOptions = { max: 4 };
    const batched = subscriber('clicks', async function clicks() {})
      .batch(batchOptions)
      .build();
    const a = app().withBroker(new MemoryBroker(), (b) => b.include(spec, batched));
    retry.attempts = 0;
    retry.backoff.initialMs = -1;
    paceOptions.debounce.window = 'never';
    paceOptions.drop.max = 0;
    batchOptions.max = 0;

    expect(spec.options.retry).toEqual({ attempts: 3, backoff: { initialMs: 10, maxMs: 100 } });
    expect(spec.options.pace).toMatchObject({
      debounce: { window: '1s', maxWait: '1 minute' },
      drop: { max: 2, per: '1 hour' },
    });
    expect(batched.options.batch).toEqual({ max: 4 });
    const c = compiled(a);
    expect(c.bill!.retry).toEqual({ attempts: 3, initialMs: 10, maxMs: 100 });
    expect(c.bill!.pace).toMatchObject({
      kind: 'debounce',
      windowMs: 1_000,
      maxWaitMs: 60_000,
      rate: { max: 2, perMs: 3_600_000, drop: true },
    });
    expect(c.clicks!.batchMax).toBe(4);

    for (const frozen of [
      spec.options,
      spec.options.retry,
      spec.options.retry!.backoff,
      spec.options.pace,
      spec.options.pace!.debounce,
      spec.options.pace!.drop,
      batched.options.batch,
      c.bill!.pace,
      c.bill!.pace!.rate,
      c.bill!.retry,
    ]) {
      expect(Object.isFrozen(frozen)).toBe(true);
    }
    expect(c.bill!.pace).not.toBe(paceOptions);
    // Functions are kept by reference.
    expect(c.bill!.key).toBe(key);
    expect(c.bill!.pace!.order).toBe(order);
  });

  it('copy the nested settings of routers too', () => {
    const retry = { attempts: 2, backoff: { initialMs: 7 } };
    const r = new Router({ retry }).include(subscriber('orders', bill));
    retry.backoff.initialMs = 70;
    expect(compiled(app().withBroker(new MemoryBroker(), (b) => b.include(r))).bill!.retry).toEqual({
      attempts: 2,
      initialMs: 7,
      maxMs: 30_000,
    });
  });
});

describe('Router.decode', () => {
  it('sets the default decoder, chainably; a subscriber own decoder wins', () => {
    const text = (raw: Uint8Array) => Buffer.from(raw).toString('utf8');
    const own = (raw: Uint8Array) => raw.length;
    const r = new Router({ prefix: 'logs.' });
    expect(r.decode(text)).toBe(r);
    r.include(subscriber('lines', bill), subscriber('sizes', async function sizes() {}).decode(own));
    const subs = compiled(app().withBroker(new MemoryBroker(), (b) => b.include(r)));
    expect(subs.bill!.decode).toBe(text);
    expect(subs.sizes!.decode).toBe(own);
  });

  it('reaches the handler', async () => {
    const broker = new MemoryBroker();
    const seen: unknown[] = [];
    const r = new Router()
      .decode((raw: Uint8Array) => `text:${Buffer.from(raw).toString('utf8')}`)
      .include(subscriber('lines', async (line: string) => void seen.push(line)));
    const a = app().withBroker(broker, (b) => b.include(r));
    await a.start();
    await broker.publish('lines', 'hello');
    await a.idle();
    await a.stop();
    expect(seen).toEqual(['text:hello']);
  });

  it('refuses what is not a decoder, naming the router and the value', () => {
    expectError(
      () => new Router({ prefix: 'logs.' }).decode(42 as never),
      'CONFIG_INVALID',
      /router "logs\.": decode must be a function, an object with parse\(\), or a Standard Schema, got 42/,
    );
  });
});

describe('memoryStore settings', () => {
  it('are checked when the store is made, naming the field and the value', () => {
    expectError(
      () => memoryStore({ shards: 0 }),
      'CONFIG_INVALID',
      /memoryStore: shards must be a positive integer, got 0/,
    );
    expectError(
      () => memoryStore({ ioSeed: 1.5 }),
      'CONFIG_INVALID',
      /memoryStore: ioSeed must be an integer, got 1\.5/,
    );
    expectError(
      () => memoryStore({ ioSeed: '7' as never }),
      'CONFIG_INVALID',
      /memoryStore: ioSeed must be an integer, got "7"/,
    );
  });
});
