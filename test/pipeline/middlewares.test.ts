// Middlewares around each handler attempt (app.use, router.use, a subscriber's .use / { use }) and publish
// middlewares around ctx.publish and dead letters (app.usePublish), on the memory broker.
import 'reflect-metadata';
import fc from 'fast-check';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  App,
  ERROR_HEADER,
  HandlerOutcome,
  ManualClock,
  MemoryBroker,
  Router,
  SluiceError,
  memoryStore,
  silentLogger,
  subscriber,
  type Context,
  type Middleware,
  type MiddlewareContext,
  type PublishInfo,
} from '../../src/index.js';

const newApp = (extra: Partial<ConstructorParameters<typeof App>[0]> = {}) =>
  new App({ name: 'mw', logger: silentLogger, clock: new ManualClock(), ...extra });

/** A middleware that notes `>id` on the way in and `<id` on the way out. */
const noting =
  (trail: string[], id: string): Middleware =>
  async (_ctx, next) => {
    trail.push(`>${id}`);
    const outcome = await next();
    trail.push(`<${id}`);
    return outcome;
  };

/** Runs `app` over one message on `topic` and stops it. */
async function once(app: App, broker: MemoryBroker, topic: string, value: unknown = { n: 1 }): Promise<void> {
  await app.start();
  await broker.publish(topic, value, { key: 'k1', headers: { 'trace-id': 't-1' } });
  await app.idle();
  await app.stop();
}

const noRetries = { attempts: 1 };

describe('middlewares: order', () => {
  it('app, then routers from the outermost in, then the subscriber own, then the handler', async () => {
    const trail: string[] = [];
    const broker = new MemoryBroker();
    class Billing {
      @subscriber('orders', { use: [noting(trail, 'decorator')] })
      bill(): void {
        trail.push('handler');
      }
    }
    const inner = new Router({ prefix: 'eu.', use: [noting(trail, 'inner-option')] }).use(noting(trail, 'inner'));
    inner.include(Billing, subscriber('refunds', () => void trail.push('handler')).use(noting(trail, 'builder')));
    const outer = new Router().use(noting(trail, 'outer')).include(inner);
    const app = newApp()
      .use(noting(trail, 'app-1'))
      .withBroker(broker, (b) => b.use(noting(trail, 'broker')).include(outer))
      .use(noting(trail, 'app-2'));
    const around = (own: string) => [
      ...['>app-1', '>app-2', '>broker', '>outer', '>inner-option', '>inner', `>${own}`],
      'handler',
      ...[`<${own}`, '<inner', '<inner-option', '<outer', '<broker', '<app-2', '<app-1'],
    ];
    await once(app, broker, 'eu.orders');
    expect(trail.splice(0)).toEqual(around('decorator'));
    const again = newApp()
      .use(noting(trail, 'app-1'))
      .use(noting(trail, 'app-2'))
      .withBroker(broker, (b) => b.use(noting(trail, 'broker')).include(outer));
    await once(again, broker, 'eu.refunds');
    expect(trail).toEqual(around('builder'));
  });

  it('any stack of middlewares, at any depth of routers, composes in the documented order', async () => {
    const broker = new MemoryBroker();
    let topicNo = 0;
    const stack = fc.record({
      app: fc.integer({ min: 0, max: 4 }),
      routers: fc.array(fc.record({ own: fc.integer({ min: 0, max: 3 }), asOption: fc.boolean() }), {
        maxLength: 4,
      }),
      subscriber: fc.integer({ min: 0, max: 4 }),
    });
    await fc.assert(
      fc.asyncProperty(stack, async (s) => {
        const trail: string[] = [];
        const expected: string[] = [];
        const topic = `t${topicNo++}`;
        let app = newApp({ name: `mw-${topic}` });
        for (let i = 0; i < s.app; i++) app = app.use(noting(trail, `app${i}`));
        for (let i = 0; i < s.app; i++) expected.push(`app${i}`);
        let spec = subscriber(topic, () => void trail.push('handler'));
        for (let i = 0; i < s.subscriber; i++) spec = spec.use(noting(trail, `sub${i}`));
        // routers[0] is the outermost: each includes the next, the innermost the subscriber.
        let included: Router | typeof spec = spec;
        for (let r = s.routers.length - 1; r >= 0; r--) {
          const { own, asOption } = s.routers[r]!;
          const mws = Array.from({ length: own }, (_, i) => noting(trail, `r${r}.${i}`));
          const router = asOption ? new Router({ use: mws }) : mws.reduce((rt, m) => rt.use(m), new Router());
          included = router.include(included);
        }
        s.routers.forEach(({ own }, r) => {
          for (let i = 0; i < own; i++) expected.push(`r${r}.${i}`);
        });
        for (let i = 0; i < s.subscriber; i++) expected.push(`sub${i}`);
        const mounted = included;
        await once(
          app.withBroker(broker, (b) => b.include(mounted)),
          broker,
          topic,
        );
        const ins = expected.map((id) => `>${id}`);
        const outs = expected.map((id) => `<${id}`).reverse();
        expect(trail).toEqual([...ins, 'handler', ...outs]);
      }),
      { numRuns: 60, seed: 20261205 },
    );
  });
});

describe('middlewares: what they see and may do', () => {
  it('reads what telemetry needs: subscriber, topic, partition, offset, key, headers, attempt and outcome', async () => {
    const broker = new MemoryBroker({ partitions: 2 });
    const seen: Record<string, unknown>[] = [];
    const app = newApp()
      .use(async (ctx, next) => {
        const outcome = await next();
        const { topic, partition, offset, key, headers, id } = ctx.message;
        seen.push({ subscriber: ctx.subscriber, topic, partition, offset, key, trace: headers['trace-id'], id });
        seen.push({ attempt: ctx.attempt, attempts: ctx.attempts, outcome: outcome.kind, payload: ctx.payload });
        return outcome;
      })
      .withBroker(broker, (b) => b.include(subscriber('orders', async function bill() {}).retry({ attempts: 4 })));
    await once(app, broker, 'orders', { n: 7 });
    const partition = broker.partitionOf('k1', 2);
    expect(seen).toEqual([
      {
        subscriber: 'bill',
        topic: 'orders',
        partition,
        offset: 0,
        key: 'k1',
        trace: 't-1',
        id: `orders/${partition}/0`,
      },
      { attempt: 1, attempts: 4, outcome: 'ack', payload: { n: 7 } },
    ]);
  });

  it('enrich ctx.state, which the handler reads', async () => {
    const broker = new MemoryBroker();
    const read: unknown[] = [];
    const app = newApp()
      .use(async (ctx, next) => {
        ctx.state.user = { id: ctx.message.headers['trace-id'] };
        return next();
      })
      .withBroker(broker, (b) =>
        b.include(
          subscriber('orders', (_v: unknown, ctx: Context) => {
            read.push(ctx.state.user);
          }),
        ),
      );
    await once(app, broker, 'orders');
    expect(read).toEqual([{ id: 't-1' }]);
  });

  it('see each attempt and its outcome, retries included', async () => {
    const broker = new MemoryBroker();
    const seen: string[] = [];
    let calls = 0;
    const app = newApp()
      .use(async (ctx, next) => {
        try {
          const outcome = await next();
          seen.push(`${ctx.attempt}/${ctx.attempts}:${outcome.kind}`);
          return outcome;
        } catch (error) {
          seen.push(`${ctx.attempt}/${ctx.attempts}:threw ${(error as Error).message}`);
          throw error;
        }
      })
      .withBroker(broker, (b) =>
        b.include(
          subscriber('orders', () => {
            calls++;
            if (calls === 1) throw new Error('flaky');
            if (calls === 2) return HandlerOutcome.retry({ delayMs: 0 });
          }).retry({ attempts: 3, backoff: { initialMs: 0 } }),
        ),
      );
    await once(app, broker, 'orders');
    expect(seen).toEqual(['1/3:threw flaky', '2/3:retry', '3/3:ack']);
    expect(broker.committed('mw', 'orders')).toEqual([1]);
  });

  it.each([
    ['ack', HandlerOutcome.ack(), { committed: 1, dead: [] as string[], calls: 1 }],
    [
      'retry',
      HandlerOutcome.retry({ delayMs: 0 }),
      { committed: 1, dead: ['exhausted 2 attempts: retry requested'], calls: 2 },
    ],
    ['reject', HandlerOutcome.reject('refused: boom'), { committed: 1, dead: ['refused: boom'], calls: 1 }],
  ])('map a thrown error to %s', async (_name, mapped, expected) => {
    const broker = new MemoryBroker();
    let calls = 0;
    const app = newApp()
      .use(async (_ctx, next) => {
        try {
          return await next();
        } catch {
          return mapped;
        }
      })
      .withBroker(broker, (b) =>
        b.include(
          subscriber('orders', () => {
            calls++;
            throw new Error('boom');
          }).retry({ attempts: 2, backoff: { initialMs: 0 } }),
        ),
      );
    await once(app, broker, 'orders');
    expect(calls).toBe(expected.calls);
    expect(broker.committed('mw', 'orders')).toEqual([expected.committed]);
    expect(broker.messages('orders.dlq').map((m) => m.headers[ERROR_HEADER])).toEqual(expected.dead);
  });

  it('short-circuit: an outcome returned without next() is the attempt outcome, and the handler does not run', async () => {
    const broker = new MemoryBroker();
    let handled = 0;
    const app = newApp().withBroker(broker, (b) =>
      b.include(
        subscriber('orders', () => void handled++).use((ctx) =>
          ctx.message.headers['trace-id'] === 't-1' ? HandlerOutcome.reject('no trace allowed') : undefined,
        ),
      ),
    );
    await app.start();
    await broker.publish('orders', { n: 1 }, { headers: { 'trace-id': 't-1' } });
    await broker.publish('orders', { n: 2 }); // returned nothing, without next(): acked, the handler not run
    await app.idle();
    await app.stop();
    expect(handled).toBe(0);
    expect(broker.messages('orders.dlq').map((m) => m.headers[ERROR_HEADER])).toEqual(['no trace allowed']);
    expect(broker.committed('mw', 'orders')).toEqual([2]);
  });

  it('a middleware that throws is a handler that throws: retried, dead-lettered, and the app keeps serving', async () => {
    const broker = new MemoryBroker();
    const handled: unknown[] = [];
    const attempts: number[] = [];
    const app = newApp()
      .use((ctx, next) => {
        attempts.push(ctx.attempt);
        if ((ctx.payload as { n: number }).n === 1) throw new Error('middleware broke');
        return next();
      })
      .withBroker(broker, (b) =>
        b.include(
          subscriber('orders', (v: unknown) => void handled.push(v)).retry({ attempts: 3, backoff: { initialMs: 0 } }),
        ),
      );
    await app.start();
    await broker.publish('orders', { n: 1 });
    await app.idle();
    await broker.publish('orders', { n: 2 });
    await app.idle();
    await app.stop();
    expect(attempts).toEqual([1, 2, 3, 1]);
    expect(broker.messages('orders.dlq').map((m) => m.headers[ERROR_HEADER])).toEqual([
      'exhausted 3 attempts: middleware broke',
    ]);
    expect(handled).toEqual([{ n: 2 }]);
    expect(broker.committed('mw', 'orders')).toEqual([2]);
  });

  it('next() called twice rejects with MIDDLEWARE_NEXT_TWICE and runs nothing more', async () => {
    const broker = new MemoryBroker();
    let handled = 0;
    const errors: unknown[] = [];
    const app = newApp()
      .use(async function twice(_ctx, next) {
        const outcome = await next();
        await next().catch((error: unknown) => errors.push(error));
        return outcome;
      })
      .withBroker(broker, (b) => b.include(subscriber('orders', () => void handled++).retry(noRetries)));
    await once(app, broker, 'orders');
    expect(handled).toBe(1);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(SluiceError);
    expect(errors[0]).toMatchObject({ code: 'MIDDLEWARE_NEXT_TWICE', message: expect.stringContaining('twice') });
    expect(broker.committed('mw', 'orders')).toEqual([1]);
  });

  it('next() called twice, uncaught, fails the attempt with its reason', async () => {
    const broker = new MemoryBroker();
    const app = newApp().withBroker(broker, (b) =>
      b.include(
        subscriber('orders', () => {})
          .retry(noRetries)
          .use(async (_ctx, next) => {
            await next();
            return next();
          }),
      ),
    );
    await once(app, broker, 'orders');
    expect(broker.messages('orders.dlq').map((m) => m.headers[ERROR_HEADER])).toEqual([
      'exhausted 1 attempt: middleware #1 called next() a second time; it runs what is inside once',
    ]);
  });

  it('returning nothing keeps what next() gave; returning anything else fails the attempt with OUTCOME_INVALID', async () => {
    const broker = new MemoryBroker();
    const inner: unknown[] = [];
    const app = newApp()
      .use(async (_ctx, next) => {
        await next(); // and returns nothing: the handler's reject stands
      })
      .withBroker(broker, (b) =>
        b.include(
          subscriber('rejects', () => HandlerOutcome.reject('handler said no')).retry(noRetries),
          subscriber('weird', () => {})
            .retry(noRetries)
            .use(async function counting(_ctx, next) {
              await next();
              return 42 as never;
            }),
          subscriber('bad-handler', () => 'yes' as never)
            .retry(noRetries)
            .use(async (_ctx, next) => {
              try {
                return await next();
              } catch (error) {
                inner.push(error);
                throw error;
              }
            }),
        ),
      );
    await app.start();
    for (const topic of ['rejects', 'weird', 'bad-handler']) await broker.publish(topic, {});
    await app.idle();
    await app.stop();
    const reasons = (topic: string) => broker.messages(`${topic}.dlq`).map((m) => m.headers[ERROR_HEADER]);
    expect(reasons('rejects')).toEqual(['handler said no']);
    expect(reasons('weird')).toEqual([
      'exhausted 1 attempt: middleware #2 (counting) returned 42, not a HandlerOutcome',
    ]);
    expect(reasons('bad-handler')).toEqual(['exhausted 1 attempt: handler returned "yes", not a HandlerOutcome']);
    expect(inner).toEqual([expect.objectContaining({ code: 'OUTCOME_INVALID' })]);
  });

  it('see a paced run: its ID, key, size and the events it gathered', async () => {
    const broker = new MemoryBroker();
    const seen: unknown[] = [];
    const app = newApp({ store: memoryStore() })
      .use(async (ctx, next) => {
        const outcome = await next();
        seen.push({ run: ctx.run && { id: ctx.run.id, key: ctx.run.key, size: ctx.run.size }, payload: ctx.payload });
        return outcome;
      })
      .withBroker(broker, (b) =>
        b.include(
          subscriber('clicks', async function clicks(_events: { n: number }[]) {})
            .pace({ batch: { max: 3 } })
            .build(),
        ),
      );
    await app.start();
    const receipts = [];
    for (const n of [1, 2, 3]) receipts.push(await app.send('clicks', { key: 'u1', event: { n } }));
    await app.idle();
    await app.stop();
    const runId = receipts[0]!.kind === 'run' ? receipts[0]!.runId : 'none';
    expect(runId).toMatch(/^u1@/);
    expect(seen).toEqual([{ run: { id: runId, key: 'u1', size: 3 }, payload: [{ n: 1 }, { n: 2 }, { n: 3 }] }]);
  });

  it('refuse what is not a function, where it is given', () => {
    const app = newApp();
    expect(() => app.use('x' as never)).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
    expect(() => new Router({ use: [() => {}, 1 as never] })).toThrow(/use\[1\] must be a middleware function/);
    expect(() =>
      subscriber('t', () => {})
        .use({} as never)
        .build(),
    ).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID', message: expect.stringContaining('use[0]') }));
  });

  it('are typed: a subscriber own middleware gets its payload type, an app or router one unknown', () => {
    interface Order {
      id: string;
    }
    subscriber('orders', (_o: Order) => {}).use((ctx) => {
      expectTypeOf(ctx.payload).toEqualTypeOf<Order>();
      expectTypeOf(ctx).toMatchTypeOf<MiddlewareContext<Order>>();
    });
    subscriber('orders')
      .decode({ parse: (v: unknown) => v as Order })
      .batch({ max: 5 })
      .use((ctx) => {
        expectTypeOf(ctx.payload).toEqualTypeOf<Order[]>();
      });
    newApp().use((ctx, next) => {
      expectTypeOf(ctx.payload).toBeUnknown();
      expectTypeOf(next).returns.resolves.toEqualTypeOf<HandlerOutcome>();
      return next();
    });
    // @ts-expect-error -- a middleware of orders cannot go on every subscriber of the app
    newApp().use((_ctx: MiddlewareContext<Order>) => undefined);
  });
});

describe('publish middlewares', () => {
  it('add headers to what handlers publish, which the consumer of that topic reads, and to dead letters', async () => {
    const broker = new MemoryBroker();
    const read: Record<string, string | undefined>[] = [];
    const infos: Omit<PublishInfo, 'context'>[] = [];
    const contexts: (string | undefined)[] = [];
    const app = newApp()
      .use(async (ctx, next) => {
        const { headers } = ctx.message;
        ctx.state.trace = headers['trace-id'] ?? headers.traceparent ?? 'none'; // where a trace starts, or goes on
        return next();
      })
      .usePublish(async (message, next, info) => {
        infos.push({ kind: info.kind, subscriber: info.subscriber });
        const trace = info.context?.state.trace as string | undefined;
        contexts.push(trace);
        await next({ ...message, headers: { ...message.headers, traceparent: trace ?? 'none' } });
      })
      .usePublish((message, next) => next({ ...message, headers: { ...message.headers, 'x-app': 'mw' } }))
      .withBroker(broker, (b) =>
        b.include(
          subscriber('orders', async function bill(_v: unknown, ctx: Context) {
            await ctx.publish('receipts', { ok: true }, { headers: { own: 'kept' } });
          }),
          subscriber('receipts', function note(_v: unknown, ctx: Context) {
            const h = ctx.message.headers;
            read.push({ traceparent: h.traceparent, app: h['x-app'], own: h.own });
            return HandlerOutcome.reject('receipts refused');
          }).retry(noRetries),
        ),
      );
    await once(app, broker, 'orders');
    expect(read).toEqual([{ traceparent: 't-1', app: 'mw', own: 'kept' }]);
    const [dead] = broker.messages('receipts.dlq');
    expect(dead?.headers).toMatchObject({ traceparent: 't-1', 'x-app': 'mw', [ERROR_HEADER]: 'receipts refused' });
    expect(infos).toEqual([
      { kind: 'publish', subscriber: 'bill' },
      { kind: 'dead-letter', subscriber: 'note' },
    ]);
    expect(contexts).toEqual(['t-1', 't-1']); // the receipt carried the trace on: its handler's state has it
  });

  it('wrap the dead letter of a message that does not decode, with no handler context', async () => {
    const broker = new MemoryBroker();
    const contexts: unknown[] = [];
    const app = newApp()
      .usePublish((message, next, info) => {
        contexts.push(info.context);
        return next({ ...message, headers: { ...message.headers, 'x-seen': info.kind } });
      })
      .withBroker(broker, (b) => b.include(subscriber('orders', () => {})));
    await app.start();
    await broker.publish('orders', 'not json');
    await app.idle();
    await app.stop();
    expect(contexts).toEqual([undefined]);
    expect(broker.messages('orders.dlq')[0]?.headers).toMatchObject({ 'x-seen': 'dead-letter' });
  });

  it('a publish middleware that throws fails ctx.publish; one that calls next twice gets MIDDLEWARE_NEXT_TWICE', async () => {
    const broker = new MemoryBroker();
    const errors: unknown[] = [];
    const app = newApp()
      .usePublish(async (message, next) => {
        if (message.topic === 'forbidden') throw new Error('not there');
        await next(message);
        if (message.topic === 'twice') await next(message);
      })
      .withBroker(broker, (b) =>
        b.include(
          subscriber('orders', async (_v: unknown, ctx: Context) => {
            for (const topic of ['forbidden', 'twice'])
              await ctx.publish(topic, {}).catch((error: unknown) => errors.push(error));
          }),
        ),
      );
    await once(app, broker, 'orders');
    expect(errors).toEqual([
      expect.objectContaining({ message: 'not there' }),
      expect.objectContaining({ code: 'MIDDLEWARE_NEXT_TWICE' }),
    ]);
    expect(broker.messages('forbidden')).toHaveLength(0);
    expect(broker.messages('twice')).toHaveLength(1);
  });
});
