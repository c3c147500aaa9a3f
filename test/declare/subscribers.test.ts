import 'reflect-metadata';
import { describe, expect, it } from 'vitest';
import {
  App,
  DEFAULTS,
  MAX_BATCH,
  MemoryBroker,
  Router,
  SubscriberBuilder,
  SubscriberSpec,
  subscriber,
  silentLogger,
  type Context,
} from '../../src/index.js';
import { expectError } from '../expect-error.js';

const app = () => new App({ name: 'shop', logger: silentLogger });
const compiled = (a: App) => Object.fromEntries(a.subscribers().map((s) => [s.name, s]));

describe('the @subscriber decorator', () => {
  class Billing {
    charged: number[] = [];
    @subscriber('orders', { workers: 4 })
    async bill(order: { id: number }, _ctx: Context) {
      this.charged.push(order.id);
    }

    @subscriber('refunds', { workers: 4, byKey: true })
    @subscriber('chargebacks', { name: 'chargebacks' })
    async refund() {}
  }

  it('produces frozen specs named Class.method, with the method bound to its instance', async () => {
    const broker = new MemoryBroker();
    const billing = new Billing();
    const a = app().withBroker(broker, (b) => b.include(billing));
    const subs = compiled(a);
    expect(Object.keys(subs).sort()).toEqual(['Billing.bill', 'Billing.refund', 'chargebacks']);
    expect(subs['Billing.bill']).toMatchObject({ topic: 'orders', workers: 4, byKey: false, group: 'shop' });
    expect(subs['Billing.refund']).toMatchObject({ topic: 'refunds', workers: 4, byKey: true });
    expect(Object.isFrozen(subs['Billing.bill'])).toBe(true);
    await a.start();
    await broker.publish('orders', { id: 7 });
    await a.idle();
    await a.stop();
    expect(billing.charged).toEqual([7]);
  });

  it("reads a class's @subscriber by its own methods' names, so one named toString is its own, not Object's", () => {
    class Named {
      @subscriber('names')
      toString() {
        return 'named';
      }
      valueOf() {
        return 1;
      }
    }
    const a = app().withBroker(new MemoryBroker(), (b) => b.include(Named));
    expect(Object.keys(compiled(a))).toEqual(['Named.toString']);
    expectError(() => new Router().include(new Date() as never), 'CONFIG_INVALID', /include: expected/);
  });

  it('includes a class by instantiating it, and also works as a standard (TC39) decorator', () => {
    const decorate = subscriber('std', { workers: 2 }) as unknown as (
      v: object,
      c: { kind: 'method'; name: string },
    ) => void;
    class Std {
      handle() {}
    }
    // eslint-disable-next-line @typescript-eslint/unbound-method -- a standard decorator is handed the method itself
    decorate(Std.prototype.handle, { kind: 'method', name: 'handle' });
    const a = app().withBroker(new MemoryBroker(), (b) => b.include(Billing).include(Std));
    expect(compiled(a)['Std.handle']).toMatchObject({ topic: 'std', workers: 2 });
  });

  it('rejects invalid options when the class is declared, naming the subscriber, topic, field and value', () => {
    expectError(
      () => {
        class Shop {
          @subscriber('orders', { workers: 0 })
          bill() {}
        }
        return Shop;
      },
      'WORKERS_INVALID',
      /subscriber "Shop\.bill"/,
      /orders/,
      /workers must be a positive integer, got 0/,
    );
    expectError(
      () => {
        class Shop {
          @subscriber('orders', { name: 'billing', wrokers: 2 } as { name: string })
          bill() {}
        }
        return Shop;
      },
      'CONFIG_INVALID',
      /subscriber "billing"/,
      /wrokers must be a known setting/,
      /got 2/,
    );
    // A standard (TC39) decorator sees the method only: the subscriber is named by it.
    const std = subscriber('std', { retry: { attempts: 0 } }) as unknown as (
      v: object,
      c: { kind: 'method'; name: string },
    ) => void;
    expectError(
      () => std(function handle() {}, { kind: 'method', name: 'handle' }),
      'CONFIG_INVALID',
      /subscriber "handle"/,
      /std/,
      /retry\.attempts must be a positive integer, got 0/,
    );
  });
});

describe('the builder chain', () => {
  const bill = async function bill() {};

  it('builds a frozen spec with every setting', () => {
    const decode = (raw: Uint8Array) => raw;
    const key = () => 'k';
    const spec = subscriber('orders', bill)
      .name('billing')
      .workersByKey(8)
      .key(key)
      .group('g')
      .decode(decode)
      .retry({ attempts: 2, backoff: { initialMs: 5, maxMs: 50 } })
      .deadLetter('orders.dead')
      .timeout(1_000)
      .build();
    expect(spec).toBeInstanceOf(SubscriberSpec);
    expect(Object.isFrozen(spec)).toBe(true);
    expect(spec.name).toBe('billing');
    const c = compiled(app().withBroker(new MemoryBroker(), (b) => b.include(spec))).billing!;
    expect(c).toMatchObject({
      topic: 'orders',
      workers: 8,
      byKey: true,
      key,
      group: 'g',
      decode,
      deadLetter: 'orders.dead',
      timeoutMs: 1_000,
    });
    expect(c.retry).toEqual({ attempts: 2, initialMs: 5, maxMs: 50 });
  });

  it('applies the documented defaults', () => {
    const c = compiled(
      app().withBroker(new MemoryBroker(), (b) => b.include(subscriber('orders', bill).build())),
    ).bill!;
    expect(c).toMatchObject({
      workers: 1,
      byKey: false,
      group: 'shop',
      deadLetter: 'orders.dlq',
      timeoutMs: DEFAULTS.timeoutMs,
      batchMax: undefined,
    });
    expect(c.retry).toEqual({ attempts: 5, initialMs: 100, maxMs: 30_000 });
  });

  it('takes an object with handle(), named Class.handle', () => {
    class Bill {
      handle() {}
    }
    expect(subscriber('orders', new Bill()).build().name).toBe('Bill.handle');
  });

  it('is immutable: each method returns a new builder', () => {
    const base = subscriber('orders', bill);
    base.workers(4);
    expect(base.build().options.workers).toBeUndefined();
  });

  it.each([
    [0, 'WORKERS_INVALID'],
    [-1, 'WORKERS_INVALID'],
    [1.5, 'WORKERS_INVALID'],
    [Number.NaN, 'WORKERS_INVALID'],
  ])('rejects workers(%s) with %s, naming the subscriber and the value', (n, code) => {
    expectError(
      () => subscriber('orders', bill).workers(n).build(),
      code,
      /subscriber "bill"/,
      /workers must be a positive integer/,
      new RegExp(`got ${String(n)}`),
    );
    expectError(() => subscriber('orders', bill).workersByKey(n).build(), code);
  });

  it.each([
    ['retry attempts', (b: SubscriberBuilder) => b.retry({ attempts: 0 }), /retry.attempts/],
    ['negative backoff', (b: SubscriberBuilder) => b.retry({ backoff: { initialMs: -1 } }), /retry.backoff.initialMs/],
    ['maxMs below initialMs', (b: SubscriberBuilder) => b.retry({ backoff: { initialMs: 100, maxMs: 10 } }), /maxMs/],
    ['empty dead letter', (b: SubscriberBuilder) => b.deadLetter(''), /deadLetter/],
    ['batch max', (b: SubscriberBuilder) => b.batch({ max: 0 }), /batch.max/],
    ['timeout', (b: SubscriberBuilder) => b.timeout(0), /timeoutMs/],
    ['decode', (b: SubscriberBuilder) => b.decode(42 as never), /decode/],
    ['batch with byKey', (b: SubscriberBuilder) => b.workersByKey(2).batch({ max: 5 }), /batch/],
  ])('rejects %s with CONFIG_INVALID', (_name, configure, field) => {
    expectError(() => configure(subscriber('orders', bill)).build(), 'CONFIG_INVALID', field, /subscriber "bill"/);
  });

  it('rejects a missing topic or handler', () => {
    expectError(() => subscriber('', bill), 'CONFIG_INVALID', /topic/);
    expectError(
      () => subscriber('orders', 42 as never),
      'CONFIG_INVALID',
      /subscriber\("orders"\)/,
      /a handler/,
      /got 42/,
    );
    // An object without handle() reads as decorator options: refused where the decorator is applied.
    const decorate = subscriber('orders', { nope: true } as never) as unknown as (target: object, key: string) => void;
    expectError(
      () => decorate({ constructor: { name: 'Shop' } }, 'bill'),
      'CONFIG_INVALID',
      /subscriber "Shop\.bill"/,
      /nope must be a known setting/,
      /got true/,
    );
  });

  it('validates pace parts and durations, quoting the text', () => {
    expectError(
      () =>
        subscriber('orders', bill)
          .pace({ debounse: '1s' } as never)
          .build(),
      'PACE_UNKNOWN_PART',
      /debounse/,
    );
    expectError(
      () => subscriber('orders', bill).pace({ debounce: '30 fortnights' }).build(),
      'PACE_BAD_DURATION',
      /30 fortnights/,
    );
  });
});

describe('routers', () => {
  const h = async function h() {};

  it('prefix topics, give defaults, and let a subscriber own settings win', () => {
    const inner = new Router({ prefix: 'eu.', retry: { attempts: 2 } }).include(
      subscriber('orders', h).name('inner').build(),
    );
    const billing = new Router({ prefix: 'billing.', workers: 4 })
      .include(subscriber('orders', h).name('a').build())
      .include(subscriber('refunds', h).name('b').workers(2).build())
      .include(inner);
    billing.workers(8); // chainable, applies to everything included, before or after
    const subs = compiled(app().withBroker(new MemoryBroker(), (b) => b.include(billing)));
    expect(subs.a).toMatchObject({ topic: 'billing.orders', workers: 8, deadLetter: 'billing.orders.dlq' });
    expect(subs.b).toMatchObject({ topic: 'billing.refunds', workers: 2 });
    expect(subs.inner).toMatchObject({ topic: 'billing.eu.orders', workers: 8 });
    expect(subs.inner!.retry.attempts).toBe(2);
  });

  it('rejects invalid defaults at once', () => {
    expectError(() => new Router({ workers: 0 }), 'WORKERS_INVALID', /router/);
    expectError(() => new Router().workers(-2), 'WORKERS_INVALID');
    expectError(() => new Router({ pace: {} } as never), 'CONFIG_INVALID', /pace/);
  });

  it('rejects what it cannot include', () => {
    expectError(() => new Router().include({} as never), 'CONFIG_INVALID', /include/);
    // @ts-expect-error -- a class without methods is refused by the compiler too
    expectError(() => new Router().include(class Plain {}), 'CONFIG_INVALID');
  });
});

describe('mounting', () => {
  const h = async function h() {};

  it('rejects two subscribers given one name', () => {
    expectError(
      () =>
        app().withBroker(new MemoryBroker(), (b) =>
          b.include(subscriber('a', h).name('same').build(), subscriber('b', h).name('same').build()),
        ),
      'CONFIG_INVALID',
      /two subscribers are named "same"/,
    );
  });

  it('names a subscriber whose default name is taken after its topic and group: two groups of one topic mount', () => {
    const a = app().withBroker(new MemoryBroker(), (b) =>
      b.include(
        subscriber('orders', h).build(),
        subscriber('orders', h).group('audit').build(),
        subscriber('refunds', h).build(),
      ),
    );
    expect(Object.keys(compiled(a))).toEqual(['h', 'orders@audit', `refunds@${a.name}`]);
    expect(compiled(a)['orders@audit']!.group).toBe('audit');
  });

  it('still refuses a default name whose derived name is taken too, and one subscriber of a topic and group twice', () => {
    expectError(
      () =>
        app().withBroker(new MemoryBroker(), (b) =>
          b.include(
            subscriber('x', h).name('orders@audit').build(),
            subscriber('y', h).build(),
            subscriber('orders', h).group('audit').build(),
          ),
        ),
      'CONFIG_INVALID',
      /two subscribers are named "h"/,
    );
    expectError(
      () =>
        app().withBroker(new MemoryBroker(), (b) =>
          b.include(subscriber('orders', h).build(), subscriber('orders', h).build()),
        ),
      'CONFIG_INVALID',
      /both read topic "orders" in group/,
    );
  });

  it('accepts a builder without build()', () => {
    const a = app().withBroker(new MemoryBroker(), (b) => b.include(subscriber('a', h).workers(3)));
    expect(compiled(a).h!.workers).toBe(3);
  });

  it('refuses pace settings that contradict each other when it builds the spec (here at include), naming the subscriber, field and value', () => {
    const paced = (pace: object, batchMax?: number) => () =>
      app().withBroker(new MemoryBroker(), (b) =>
        b.include(
          batchMax === undefined
            ? subscriber('a', h).pace(pace)
            : subscriber('a', h).pace(pace).batch({ max: batchMax }),
        ),
      );
    expectError(
      paced({ perMinute: 3, drop: { max: 1, per: '1 hour' } }),
      'CONFIG_INVALID',
      /subscriber "h": pace\.perMinute and pace\.drop exclude each other .*got perMinute 3 and drop \{"max":1,"per":"1 hour"\}/,
    );
    expectError(
      paced({ drop: { max: 1, per: 0 } }),
      'CONFIG_INVALID',
      /pace\.drop\.per must be longer than 0 ms, got 0/,
    );
    expectError(paced({ perMinute: 0 }), 'CONFIG_INVALID', /pace\.perMinute must be a positive integer, got 0/);
    expectError(
      paced({ drop: { max: 2.5, per: '1s' } }),
      'CONFIG_INVALID',
      /pace\.drop\.max must be a positive integer, got 2\.5/,
    );
    expectError(
      paced({ drop: { max: 2, per: 'a while' } }),
      'PACE_BAD_DURATION',
      /pace\.drop\.per: "a while" is not a duration/,
    );
    expectError(paced({ order: 3 }), 'CONFIG_INVALID', /pace\.order must be a function, got 3/);
    expectError(paced({ turns: 'caller' }), 'CONFIG_INVALID', /pace\.turns must be 'key', got "caller"/);
    expectError(
      paced({ debounce: '1s', batch: { max: 3 } }),
      'CONFIG_INVALID',
      /debounce and pace\.batch exclude each other/,
    );
    expectError(
      paced({ batch: { max: MAX_BATCH + 1 } }),
      'CONFIG_INVALID',
      new RegExp(`at most MAX_BATCH \\(${MAX_BATCH}\\), got ${MAX_BATCH + 1}`),
    );
    expectError(
      paced({ debounce: { window: '10s', maxWait: '5s' } }),
      'CONFIG_INVALID',
      /maxWait must be at least the window \(10000 ms\), got "5s"/,
    );
    expectError(paced({ batch: {} }, 5), 'CONFIG_INVALID', /batch must not be combined with pace/);
    expectError(paced({ debounce: 'soon' }), 'PACE_BAD_DURATION', /pace\.debounce: "soon" is not a duration/);
    // Parsed where declared: build() refuses them without an app, and so does the decorator.
    expectError(
      () => subscriber('a', h).pace({ debounce: '1s', batch: {} }).build(),
      'CONFIG_INVALID',
      /^subscriber "h": pace\.debounce and pace\.batch exclude each other/,
    );
    expectError(
      () => {
        class Shop {
          @subscriber('orders', { pace: { perMinute: 1, drop: { max: 1, per: '1s' } } })
          bill() {}
        }
        return Shop;
      },
      'CONFIG_INVALID',
      /^subscriber "Shop\.bill" \(@subscriber\("orders"\)\): pace\.perMinute and pace\.drop exclude each other/,
    );
    expect(() => paced({ debounce: { window: '1s', maxWait: '1 minute' }, dedup: '5 minutes' })()).not.toThrow();
    // Every part goes with every other but its exclusions; a pace of only a rate, an order or turns is a run per start.
    expect(() => paced({ batch: { max: 10 }, perMinute: 5, order: () => 1, turns: 'key' })()).not.toThrow();
    expect(() => paced({ debounce: '1s', drop: { max: 1, per: '1 hour' }, order: () => 1 })()).not.toThrow();
    expect(() => paced({ dedup: '1 minute' })()).not.toThrow();
    expect(() => paced({ turns: 'key' })()).not.toThrow();
  });
});

describe('mount-time conflicts and merging', () => {
  const h = async function h() {};
  const g = async function g() {};

  it('refuses two subscribers reading one topic in one group (they would split its messages)', () => {
    expectError(
      () =>
        app().withBroker(new MemoryBroker(), (b) =>
          b.include(subscriber('orders', h).build(), subscriber('orders', g).build()),
        ),
      'CONFIG_INVALID',
      /both read topic "orders" in group "shop"/,
    );
    const ok = app().withBroker(new MemoryBroker(), (b) =>
      b.include(subscriber('orders', h).build(), subscriber('orders', g).group('audit').build()),
    );
    expect(ok.subscribers()).toHaveLength(2);
  });

  it('merges retry field by field: a subscriber attempts keep its router backoff', () => {
    const r = new Router({ retry: { backoff: { initialMs: 50, maxMs: 1_000 } } }).include(
      subscriber('t', h).retry({ attempts: 10 }).build(),
    );
    expect(compiled(app().withBroker(new MemoryBroker(), (b) => b.include(r))).h!.retry).toEqual({
      attempts: 10,
      initialMs: 50,
      maxMs: 1_000,
    });
  });
});
