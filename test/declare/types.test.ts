import 'reflect-metadata';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  App,
  MemoryBroker,
  Router,
  SubscriberBuilder,
  silentLogger,
  subscriber,
  type Context,
  type Includable,
  type KeySource,
  type NotIncludable,
  type TopicBuilder,
} from '../../src/index.js';
import { expectError } from '../expect-error.js';

// What the public declaring API lets through the compiler. `npm run typecheck` compiles this file: each
// `@ts-expect-error` fails the typecheck if the line under it compiles, and each `expectTypeOf` if the type
// differs. The tests that run check that what compiles also mounts and serves.

interface Order {
  id: string;
  cents: number;
}
interface Refund {
  refundId: string;
  reason: string;
}
const Order = { parse: (v: unknown): Order => v as Order }; // a schema, as zod's
const refundSchema = { parse: (v: unknown): Refund => v as Refund };
const bill = (_o: Order, _ctx: Context) => {};

describe('a decoder and its handler', () => {
  it('with the handler first, the decoder must return what the handler takes', () => {
    subscriber('orders', (_o: Order) => {}).decode(Order);
    // @ts-expect-error -- refunds decoded for a handler of orders
    subscriber('orders', (_o: Order) => {}).decode(refundSchema);
    // @ts-expect-error -- a byte decoder that returns text, for a handler of orders
    subscriber('orders', bill).decode((raw) => Buffer.from(raw).toString('utf8'));
    subscriber('lines', (_line: string) => {}).decode((raw) => Buffer.from(raw).toString('utf8'));
    subscriber('raw', (_raw: Uint8Array) => {}).decode((raw) => raw);
    // A handler of arrays (batch) takes a decoder of one item, or of the whole array.
    subscriber('orders', (_os: Order[]) => {})
      .batch({ max: 10 })
      .decode(Order);
    // @ts-expect-error -- and not of anything else
    subscriber('orders', (_os: Order[]) => {}).decode(refundSchema);
    // A handler that does not say its payload's type takes any decoder.
    subscriber('orders', () => {}).decode(refundSchema);
  });

  it('with the decoder first, its type gives the handler its payload', () => {
    const b = subscriber('orders')
      .decode(Order)
      .workers(4)
      .handle((o, ctx) => {
        expectTypeOf(o).toEqualTypeOf<Order>();
        expectTypeOf(ctx).toEqualTypeOf<Context>();
      });
    expectTypeOf(b).toEqualTypeOf<SubscriberBuilder<Order>>();
    const orders = subscriber('orders').decode(Order);
    // @ts-expect-error -- a handler of refunds for decoded orders
    orders.handle((_r: Refund) => {});
    // A handler may take less than the decoder gives.
    subscriber('orders')
      .decode(Order)
      .handle((_o: { id: string }) => {});
    // The key function reads one message's value, with the decoder's type.
    subscriber('orders')
      .decode(Order)
      .workersByKey(4)
      .key((m) => {
        expectTypeOf(m).toEqualTypeOf<KeySource<Order>>();
        return m.value.id;
      });
    // A later decoder replaces the type with its own.
    subscriber('orders')
      .decode(refundSchema)
      .decode(Order)
      .handle((o) => {
        expectTypeOf(o).toEqualTypeOf<Order>();
      });
    // The chain that starts with the handler is the same as subscriber(topic, handler).
    expectTypeOf(subscriber('orders').handle(bill)).toEqualTypeOf<SubscriberBuilder<Order, void>>();
    expectTypeOf(subscriber('orders').handle(bill)).toEqualTypeOf(subscriber('orders', bill));
  });

  it('after batch, or a pace with batch, the handler gets an array', () => {
    subscriber('orders')
      .decode(Order)
      .batch({ max: 10 })
      .handle((os) => {
        expectTypeOf(os).toEqualTypeOf<Order[]>();
      });
    subscriber('orders')
      .decode(Order)
      .pace({ batch: { max: 10, wait: '1s' } })
      .handle((os) => {
        expectTypeOf(os).toEqualTypeOf<Order[]>();
      });
    subscriber('orders')
      .decode(Order)
      .pace({ debounce: '1s' })
      .handle((o) => {
        expectTypeOf(o).toEqualTypeOf<Order>();
      });
    // @ts-expect-error -- one order for a batch of them
    subscriber('orders').decode(Order).batch({ max: 10 }).handle(bill);
  });

  it('serves what it declares: the decoded value reaches the handler', async () => {
    const broker = new MemoryBroker();
    const seen: (Order | Order[])[] = [];
    const app = new App({ name: 'types', logger: silentLogger }).withBroker(broker, (b) =>
      b.include(
        subscriber('orders')
          .decode({ parse: (v: unknown) => ({ ...(v as Order), cents: (v as Order).cents * 100 }) })
          .handle((o) => void seen.push(o)),
        subscriber('clicks')
          .decode(Order)
          .batch({ max: 10 })
          .handle((os) => void seen.push(os)),
      ),
    );
    await app.start();
    await broker.publish('orders', { id: 'o1', cents: 2 });
    await app.idle();
    await broker.publish('clicks', { id: 'c1', cents: 0 });
    await app.idle();
    await app.stop();
    expect(seen).toEqual([{ id: 'o1', cents: 200 }, [{ id: 'c1', cents: 0 }]]);
  });
});

describe('include', () => {
  class Billing {
    @subscriber('orders')
    bill(_o: Order) {}
  }
  class Hidden {
    @subscriber('hidden')
    private secret() {}
  }
  class Undecorated {
    bill() {}
  }
  class NeedsArgs {
    constructor(readonly n: number) {}
    @subscriber('args')
    bill() {}
  }
  // Past the compiler, as JavaScript (or a cast) would get there.
  const include = (item: unknown) => () =>
    new App({ name: 'types', logger: silentLogger }).withBroker(new MemoryBroker(), (b) => b.include(item as never));

  it('takes specs, builders, routers, decorated classes and their instances', () => {
    const router = new Router({ prefix: 'eu.' }).include(subscriber('refunds', bill));
    const r = new Router().include(
      subscriber('a', bill),
      subscriber('b', bill).build(),
      router,
      Billing,
      new Billing(),
      new NeedsArgs(1),
      Hidden, // TypeScript cannot see private methods: a class with private members passes
    );
    expect(r).toBeInstanceOf(Router);
    const specs = [subscriber('c', bill).build(), subscriber('d', bill).build()];
    new Router().include(...specs);
  });

  it('does not compile for what it would refuse', () => {
    // @ts-expect-error -- a Date
    expect(() => new Router().include(new Date())).toThrow(/include/);
    // @ts-expect-error -- an array
    expect(() => new Router().include([subscriber('a', bill).build()])).toThrow(/include/);
    // @ts-expect-error -- a function that is no class
    expect(() => new Router().include(() => 1)).toThrow(/include/);
    // @ts-expect-error -- text
    expect(() => new Router().include('orders')).toThrow(/include/);
    // @ts-expect-error -- a class without methods
    expect(() => new Router().include(class Plain {})).toThrow(/include/);
    // @ts-expect-error -- an object without methods
    expect(() => new Router().include({ topic: 'orders' })).toThrow(/include/);
    // @ts-expect-error -- a class whose constructor needs an argument: include would make it without one
    new Router().include(NeedsArgs);
    // @ts-expect-error -- a chain without its handler
    expect(() => new Router().include(subscriber('orders').decode(Order))).toThrow(/without a handler/);
  });

  it('says why, in the type the item is checked against', () => {
    type Refused<Reason extends string> = NotIncludable<Reason>;
    expectTypeOf<Includable<Date>>().toEqualTypeOf<
      Refused<'not a subscriber spec, a builder, a router, or a class with @subscriber methods or an instance of one'>
    >();
    expectTypeOf<Includable<typeof NeedsArgs>>().toEqualTypeOf<
      Refused<'a class that include cannot make with new and no arguments: pass an instance'>
    >();
    expectTypeOf<Includable<{ topic: string }>>().toEqualTypeOf<
      Refused<'an object without methods, so none with @subscriber'>
    >();
    expectTypeOf<Includable<TopicBuilder<Order>>>().toEqualTypeOf<
      Refused<'a subscriber without a handler yet: end its chain with .handle(...)'>
    >();
    expectTypeOf<Includable<typeof Billing>>().toEqualTypeOf<typeof Billing>();
    expectTypeOf<Includable<Hidden>>().toEqualTypeOf<Hidden>();
    expectTypeOf<Includable<SubscriberBuilder<Order>>>().toEqualTypeOf<SubscriberBuilder<Order>>();
  });

  it('refuses, when it runs, what TypeScript cannot tell: methods without @subscriber', () => {
    expectError(include(Undecorated), 'CONFIG_INVALID', /include: expected a subscriber spec/);
    expectError(include(new Undecorated()), 'CONFIG_INVALID', /include: expected a subscriber spec/);
    expectError(include({ handle: () => {} }), 'CONFIG_INVALID', /include: expected a subscriber spec/);
    expectError(
      include(subscriber('orders').decode(Order)),
      'CONFIG_INVALID',
      /include: a subscriber without a handler; end its chain with \.handle\(\.\.\.\)/,
    );
  });
});

describe('the decorator forms', () => {
  it('subscriber(topic) without options is still a decorator, legacy and standard', () => {
    expectTypeOf(subscriber('orders')).toBeCallableWith({}, 'bill', {});
    expectTypeOf(subscriber('orders')).toBeCallableWith(bill, { kind: 'method', name: 'bill' });
    expectTypeOf(subscriber('orders', { workers: 2 })).toBeCallableWith(bill, { kind: 'method', name: 'bill' });
    class Shop {
      @subscriber('orders')
      @subscriber('refunds', { name: 'refunds', workers: 2 })
      bill() {}
    }
    const app = new App({ name: 'types', logger: silentLogger }).withBroker(new MemoryBroker(), (b) => b.include(Shop));
    expect(app.subscribers().map((s) => [s.name, s.topic, s.workers])).toEqual([
      ['refunds', 'refunds', 2], // decorators apply from the method upwards
      ['Shop.bill', 'orders', 1],
    ]);
  });
});
