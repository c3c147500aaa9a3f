/**
 * Tracing on the memory broker, with the OpenTelemetry SDK's in-memory exporter: a span per attempt with the
 * messaging attributes, its parent from the message's `traceparent`, active in the handler; the trace context
 * written into what is published and dead-lettered; links of batches and paced runs, bounded.
 */
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SamplingDecision,
  SpanKind,
  SpanStatusCode,
  trace,
  type TextMapPropagator,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { App, HandlerOutcome, MemoryBroker, subscriber, type AppOptions, type PaceOptions } from '../../src/index.js';
import { ManualClock, memoryStore, silentLogger } from '../../src/testing.js';
import { loadOtelApi } from '../../src/telemetry/tracing/tracing.js';
import { Counter } from '../helpers.js';
import { expectError } from '../expect-error.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager();

beforeAll(() => {
  context.setGlobalContextManager(contextManager.enable());
});
afterAll(() => {
  context.disable();
});

const apps: App[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.stop()));
  exporter.reset();
});

function appOf(options: Partial<AppOptions> = {}): App {
  const app = new App({ name: 'tracing', logger: silentLogger, tracing: { tracerProvider: provider }, ...options });
  apps.push(app);
  return app;
}

/** The spans ended so far, in the order they ended. */
async function spans(): Promise<ReadableSpan[]> {
  await provider.forceFlush();
  return exporter.getFinishedSpans();
}

const hex = (n: number, width: number): string => n.toString(16).padStart(width, '0');
/** A producer's trace context: trace `t`, span `s`, sampled. */
const parent = (t: number, s: number) => ({ traceId: hex(t, 32), spanId: hex(s, 16) });
const traceparent = (p: { traceId: string; spanId: string }): string => `00-${p.traceId}-${p.spanId}-01`;

describe('tracing: a span per attempt', () => {
  it('has the messaging attributes, the incoming traceparent as parent, and is active in middlewares and handler', async () => {
    const broker = new MemoryBroker();
    const producer = parent(0xabc, 0x123);
    const seen: { active?: string; inMiddleware?: string; child?: ReadableSpan } = {};
    const app = appOf().use(async (_ctx, next) => {
      seen.inMiddleware = trace.getActiveSpan()?.spanContext().spanId;
      return next();
    });
    app.withBroker(broker, (b) =>
      b.include(
        subscriber('orders', async (_v: unknown, ctx) => {
          await Promise.resolve(); // across an await
          seen.active = trace.getActiveSpan()?.spanContext().spanId;
          provider.getTracer('test').startSpan('child').end();
          await ctx.publish('receipts', { ok: true });
        })
          .name('billing')
          .build(),
      ),
    );
    await app.start();
    await broker.publish('orders', { n: 1 }, { key: 'k1', headers: { traceparent: traceparent(producer) } });
    await app.idle();
    const [child, span] = await spans();
    expect(span!.name).toBe('process orders');
    expect(span!.kind).toBe(SpanKind.CONSUMER);
    expect(span!.attributes).toEqual({
      'messaging.system': 'sluice-memory',
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.destination.name': 'orders',
      'messaging.destination.partition.id': '0',
      'messaging.kafka.offset': 0,
      'messaging.kafka.message.key': 'k1',
      'messaging.consumer.group.name': 'tracing',
      'sluice.subscriber': 'billing',
      'sluice.attempt': 1,
      'sluice.outcome': 'ack',
    });
    expect(span!.status.code).toBe(SpanStatusCode.UNSET);
    const own = span!.spanContext();
    expect(own.traceId).toBe(producer.traceId);
    expect(span!.parentSpanContext?.spanId).toBe(producer.spanId);
    expect(seen.active).toBe(own.spanId);
    expect(seen.inMiddleware).toBe(own.spanId);
    expect(child!.parentSpanContext?.spanId).toBe(own.spanId);
    expect(broker.messages('receipts')[0]!.headers.traceparent).toBe(`00-${own.traceId}-${own.spanId}-01`);
  });

  it('is a root span for a message without a trace context, and its publish carries it', async () => {
    const broker = new MemoryBroker();
    const app = appOf().withBroker(broker, (b) =>
      b.include(subscriber('orders', (_v: unknown, ctx) => ctx.publish('receipts', 'r')).build()),
    );
    await app.start();
    await broker.publish('orders', { n: 1 });
    await broker.publish('orders', { n: 2 }, { headers: { traceparent: 'not a traceparent' } });
    await app.idle();
    const all = await spans();
    expect(all).toHaveLength(2);
    for (const span of all) expect(span.parentSpanContext).toBeUndefined();
    const sent = broker.messages('receipts').map((m) => m.headers.traceparent);
    expect(sent).toEqual(all.map((s) => `00-${s.spanContext().traceId}-${s.spanContext().spanId}-01`));
  });

  it('keeps the trace context a ctx.publish sets itself', async () => {
    const broker = new MemoryBroker();
    const theirs = traceparent(parent(7, 7));
    const app = appOf().withBroker(broker, (b) =>
      b.include(
        subscriber('orders', (_v: unknown, ctx) =>
          ctx.publish('receipts', 'r', { headers: { traceparent: theirs, 'x-other': '1' } }),
        ).build(),
      ),
    );
    await app.start();
    await broker.publish('orders', 1);
    await app.idle();
    expect(broker.messages('receipts')[0]!.headers).toEqual({ traceparent: theirs, 'x-other': '1' });
  });

  it('makes one span per attempt, the failed ones with status ERROR and the exception, all of one parent', async () => {
    const clock = new ManualClock(0);
    const broker = new MemoryBroker();
    const attempts = new Counter();
    const app = appOf({ clock }).withBroker(broker, (b) =>
      b.include(
        subscriber('orders', async (_v: unknown, ctx) => {
          attempts.add();
          if (ctx.message.attempt < 3) throw new TypeError(`attempt ${ctx.message.attempt} failed`);
        })
          .retry({ attempts: 3, backoff: { initialMs: 10, maxMs: 10 } })
          .build(),
      ),
    );
    await app.start();
    const producer = parent(1, 2);
    await broker.publish('orders', 1, { headers: { traceparent: traceparent(producer) } });
    for (let i = 0; i < 20 && attempts.value < 3; i++) await clock.advance(10);
    await app.idle();
    const all = await spans();
    expect(all.map((s) => [s.attributes['sluice.attempt'], s.attributes['sluice.outcome']])).toEqual([
      [1, 'retry'],
      [2, 'retry'],
      [3, 'ack'],
    ]);
    for (const s of all) {
      expect(s.spanContext().traceId).toBe(producer.traceId);
      expect(s.parentSpanContext?.spanId).toBe(producer.spanId);
    }
    const [first] = all;
    expect(first!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'attempt 1 failed' });
    expect(first!.attributes['error.type']).toBe('TypeError');
    expect(first!.events.map((e) => [e.name, e.attributes?.['exception.message']])).toEqual([
      ['exception', 'attempt 1 failed'],
    ]);
    expect(all[2]!.status.code).toBe(SpanStatusCode.UNSET);
  });

  it.each([
    [
      'a revoked Proxy',
      () => {
        const { proxy, revoke } = Proxy.revocable(new Error('gone'), {});
        revoke();
        return proxy;
      },
    ],
    [
      'a Proxy whose get throws',
      () =>
        new Proxy(new Error('x'), {
          get() {
            throw new Error('no reading me');
          },
        }),
    ],
    [
      'an Error whose message getter throws',
      () =>
        Object.defineProperty(new Error(), 'message', {
          get() {
            throw new Error('no');
          },
        }),
    ],
  ])(
    'dead-letters a handler or middleware that throws %s, its span ERROR, and goes on serving',
    async (_what, thrown) => {
      const broker = new MemoryBroker();
      const app = appOf().withBroker(broker, (b) =>
        b.include(
          subscriber('orders', async (v: { n: number }) => {
            if (v.n === 1) throw thrown();
          })
            .retry({ attempts: 1 })
            .build(),
          subscriber('refunds', async () => {})
            .use(async () => {
              throw thrown();
            })
            .retry({ attempts: 1 })
            .build(),
        ),
      );
      await app.start();
      await broker.publish('orders', { n: 1 });
      await broker.publish('refunds', { n: 1 });
      await app.idle();
      expect(broker.values('orders.dlq')).toEqual([{ n: 1 }]);
      expect(broker.values('refunds.dlq')).toEqual([{ n: 1 }]);
      await broker.publish('orders', { n: 2 });
      await app.idle();
      const all = await spans();
      expect(
        all.map((s) => [s.attributes['messaging.destination.name'], s.status.code, s.attributes['sluice.outcome']]),
      ).toEqual(
        expect.arrayContaining([
          ['orders', SpanStatusCode.ERROR, 'dead_letter'],
          ['refunds', SpanStatusCode.ERROR, 'dead_letter'],
          ['orders', SpanStatusCode.UNSET, 'ack'],
        ]),
      );
    },
  );

  it("writes the last attempt's span into the dead letter, in place of the original traceparent", async () => {
    const clock = new ManualClock(0);
    const broker = new MemoryBroker();
    const attempts = new Counter();
    const app = appOf({ clock }).withBroker(broker, (b) =>
      b.include(
        subscriber('orders', async () => {
          attempts.add();
          throw new Error('always');
        })
          .retry({ attempts: 2, backoff: { initialMs: 10, maxMs: 10 } })
          .build(),
      ),
    );
    await app.start();
    await broker.publish('orders', 1, { headers: { traceparent: traceparent(parent(3, 4)), tracestate: 'v=1' } });
    for (let i = 0; i < 20 && attempts.value < 2; i++) await clock.advance(10);
    await app.idle();
    const all = await spans();
    expect(all.map((s) => s.attributes['sluice.outcome'])).toEqual(['retry', 'dead_letter']);
    const last = all[1]!.spanContext();
    const [dead] = broker.messages('orders.dlq');
    expect(dead!.headers.traceparent).toBe(`00-${last.traceId}-${last.spanId}-01`);
    expect(dead!.headers.tracestate).toBe('v=1');
    expect(dead!.headers['x-sluice-error']).toBe('exhausted 2 attempts: always');
  });

  it('ends the span of an attempt that timed out, with HANDLER_TIMEOUT, as the watchdog gives it up', async () => {
    const clock = new ManualClock(0);
    const broker = new MemoryBroker();
    const started = new Counter();
    const app = appOf({ clock }).withBroker(broker, (b) =>
      b.include(
        subscriber('orders', async () => {
          started.add();
          await new Promise(() => {}); // never settles
        })
          .retry({ attempts: 1 })
          .timeout(100)
          .build(),
      ),
    );
    await app.start();
    await broker.publish('orders', 1);
    await started.reach(1);
    for (let i = 0; i < 10 && broker.messages('orders.dlq').length === 0; i++) await clock.advance(50);
    await app.idle();
    const [span] = await spans();
    expect(span!.attributes['sluice.outcome']).toBe('timeout');
    expect(span!.attributes['error.type']).toBe('HANDLER_TIMEOUT');
    expect(span!.status.code).toBe(SpanStatusCode.ERROR);
    expect(span!.events[0]!.name).toBe('exception');
  });

  it('marks a rejected attempt ERROR without an exception', async () => {
    const broker = new MemoryBroker();
    const app = appOf().withBroker(broker, (b) =>
      b.include(subscriber('orders', () => HandlerOutcome.reject('bad order')).build()),
    );
    await app.start();
    await broker.publish('orders', 1);
    await app.idle();
    const [span] = await spans();
    expect(span!.attributes['sluice.outcome']).toBe('reject');
    expect(span!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'bad order' });
    expect(span!.events).toEqual([]);
  });
});

describe('tracing: batches and paced runs link what they gathered', () => {
  it("links a batch's span to its messages' contexts, at most linksMax", async () => {
    const broker = new MemoryBroker();
    const producers = Array.from({ length: 8 }, (_, i) => parent(100 + i, 200 + i));
    for (const p of producers) broker.publishNow('orders', 1, { headers: { traceparent: traceparent(p) } });
    broker.publishNow('orders', 1); // no context: no link
    const sizes: number[] = [];
    const app = appOf({ tracing: { tracerProvider: provider, linksMax: 5 } }).withBroker(broker, (b) =>
      b.include(
        subscriber('orders', async (batch: unknown[]) => void sizes.push(batch.length))
          .batch({ max: 50 })
          .build(),
      ),
    );
    await app.start();
    await app.idle();
    expect(sizes).toEqual([9]);
    const [span] = await spans();
    expect(span!.parentSpanContext).toBeUndefined();
    expect(span!.attributes['messaging.batch.message_count']).toBe(9);
    expect(span!.links.map((l) => l.context.spanId)).toEqual(producers.slice(0, 5).map((p) => p.spanId));
    expect(span!.links.map((l) => l.context.traceId)).toEqual(producers.slice(0, 5).map((p) => p.traceId));
  });

  it("links a paced run's span to its deliveries' and app.send's contexts, at most linksMax, with its run ID", async () => {
    const clock = new ManualClock(0);
    const broker = new MemoryBroker();
    const runs: string[] = [];
    const app = appOf({ clock, store: memoryStore(), tracing: { tracerProvider: provider, linksMax: 3 } });
    app.withBroker(broker, (b) =>
      b.include(
        subscriber('jobs', async (_events: unknown[], ctx) => void runs.push(ctx.run!.id))
          .name('paced')
          .pace({ batch: { max: 100, wait: 1000 } })
          .build(),
      ),
    );
    await app.start();
    const sender = provider.getTracer('test').startSpan('sender');
    await context.with(trace.setSpan(ROOT_CONTEXT, sender), () => app.send('paced', { key: 'k', event: 0 }));
    sender.end();
    const producers = Array.from({ length: 4 }, (_, i) => parent(300 + i, 400 + i));
    for (const p of producers) await broker.publish('jobs', 1, { key: 'k', headers: { traceparent: traceparent(p) } });
    await app.idle(); // every event journaled; the window is open
    await clock.advance(1000);
    await app.idle();
    expect(runs).toHaveLength(1);
    const run = (await spans()).find((s) => s.name === 'process jobs')!;
    expect(run.attributes['sluice.run.id']).toBe(runs[0]);
    expect(run.attributes['messaging.batch.message_count']).toBe(5);
    expect(run.links.map((l) => l.context.spanId)).toEqual([
      sender.spanContext().spanId,
      producers[0]!.spanId,
      producers[1]!.spanId,
    ]);
  });

  it('links the event whose arrival starts the run: the one that fills a batch, each start of perMinute, drop and batch max 1', async () => {
    const clock = new ManualClock(0);
    const broker = new MemoryBroker();
    const runs = new Map<string, string[]>();
    const paced = (topic: string, pace: PaceOptions) =>
      subscriber(topic, async (_events: unknown, ctx) => void runs.set(ctx.run!.id, []))
        .name(topic)
        .pace(pace)
        .build();
    const app = appOf({ clock, store: memoryStore(), tracing: { tracerProvider: provider, linksMax: 10 } });
    app.withBroker(broker, (b) =>
      b.include(
        paced('filled', { batch: { max: 3, wait: 60_000 } }),
        paced('one', { batch: { max: 1, wait: 60_000 } }),
        paced('rated', { perMinute: 600 }),
        paced('dropping', { drop: { max: 5, per: 60_000 } }),
      ),
    );
    await app.start();
    const producers = Array.from({ length: 3 }, (_, i) => parent(500 + i, 600 + i));
    for (const p of producers)
      await broker.publish('filled', 1, { key: 'k', headers: { traceparent: traceparent(p) } });
    const starts = ['one', 'rated', 'dropping'].map((topic, i) => ({ topic, p: parent(700 + i, 800 + i) }));
    for (const { topic, p } of starts)
      await broker.publish(topic, 1, { key: 'k', headers: { traceparent: traceparent(p) } });
    const sender = provider.getTracer('test').startSpan('sender');
    await context.with(trace.setSpan(ROOT_CONTEXT, sender), () => app.send('rated', { key: 'other', event: 1 }));
    sender.end();
    await app.idle();
    expect(runs.size).toBe(5); // no window waited for its timer
    const linksOf = async (topic: string) =>
      (await spans()).filter((s) => s.name === `process ${topic}`).map((s) => s.links.map((l) => l.context.spanId));
    expect(await linksOf('filled')).toEqual([producers.map((p) => p.spanId)]);
    for (const { topic, p } of starts.slice(0, 1).concat(starts.slice(2)))
      expect(await linksOf(topic)).toEqual([[p.spanId]]);
    expect((await linksOf('rated')).sort()).toEqual([[starts[1]!.p.spanId], [sender.spanContext().spanId]].sort());
  });
});

describe('tracing: propagators and settings', () => {
  it('reads and writes headers through the propagator registered with the API, when there is one', async () => {
    const custom: TextMapPropagator = {
      inject(ctx, carrier: Record<string, string>) {
        const sc = trace.getSpanContext(ctx);
        if (sc) carrier['x-trace'] = `${sc.traceId}:${sc.spanId}`;
      },
      extract(ctx, carrier: Record<string, string>) {
        const [traceId, spanId] = (carrier['x-trace'] ?? '').split(':');
        if (!traceId || !spanId) return ctx;
        return trace.setSpanContext(ctx, { traceId, spanId, traceFlags: 1, isRemote: true });
      },
      fields: () => ['x-trace'],
    };
    propagation.setGlobalPropagator(custom);
    try {
      const broker = new MemoryBroker();
      const app = appOf().withBroker(broker, (b) =>
        b.include(subscriber('orders', (_v: unknown, ctx) => ctx.publish('receipts', 'r')).build()),
      );
      await app.start();
      const p = parent(9, 9);
      await broker.publish('orders', 1, { headers: { 'x-trace': `${p.traceId}:${p.spanId}` } });
      await app.idle();
      const [span] = await spans();
      expect(span!.parentSpanContext?.spanId).toBe(p.spanId);
      const own = span!.spanContext();
      expect(broker.messages('receipts')[0]!.headers).toEqual({ 'x-trace': `${own.traceId}:${own.spanId}` });
    } finally {
      propagation.disable();
    }
  });

  it('passes the incoming trace context on unchanged with no SDK registered (the API no-op tracer)', async () => {
    const broker = new MemoryBroker();
    const app = appOf({ tracing: true }).withBroker(broker, (b) =>
      b.include(subscriber('orders', (_v: unknown, ctx) => ctx.publish('receipts', 'r')).build()),
    );
    await app.start();
    const incoming = traceparent(parent(5, 6));
    await broker.publish('orders', 1, { headers: { traceparent: incoming } });
    await broker.publish('orders', 2);
    await app.idle();
    expect(broker.messages('receipts').map((m) => m.headers.traceparent)).toEqual([incoming, undefined]);
    expect(await spans()).toEqual([]);
  });

  it('starts recording once an SDK is registered with the API after the app started', async () => {
    const broker = new MemoryBroker();
    const app = appOf({ tracing: true }).withBroker(broker, (b) =>
      b.include(subscriber('orders', (_v: unknown, ctx) => ctx.publish('receipts', 'r')).build()),
    );
    await app.start();
    await broker.publish('orders', 1, { headers: { traceparent: traceparent(parent(7, 7)) } });
    await app.idle();
    expect(await spans()).toEqual([]);
    trace.setGlobalTracerProvider(provider);
    try {
      await broker.publish('orders', 2, { headers: { traceparent: traceparent(parent(7, 8)) } });
      await app.idle();
      const [span] = await spans();
      expect(span!.parentSpanContext?.spanId).toBe(parent(7, 8).spanId);
      expect(span!.attributes['sluice.attempt']).toBe(1);
      expect(broker.messages('receipts')[1]!.headers.traceparent).toBe(
        `00-${parent(7, 8).traceId}-${span!.spanContext().spanId}-01`,
      );
    } finally {
      trace.disable();
    }
  });

  it("records nothing of a span its sampler drops, which sees the subscriber's attributes; publishes carry it on", async () => {
    const seen: Record<string, unknown>[] = [];
    const dropping = new BasicTracerProvider({
      spanProcessors: [new SimpleSpanProcessor(exporter)],
      sampler: {
        shouldSample: (_c, _t, _n, _k, attributes) => {
          seen.push({ ...attributes });
          return { decision: SamplingDecision.NOT_RECORD };
        },
      },
    });
    const broker = new MemoryBroker();
    const app = appOf({ tracing: { tracerProvider: dropping } }).withBroker(broker, (b) =>
      b.include(subscriber('orders', (_v: unknown, ctx) => ctx.publish('receipts', 'r')).build()),
    );
    await app.start();
    await broker.publish('orders', 1, { headers: { traceparent: traceparent(parent(3, 4)) } });
    await app.idle();
    expect(await spans()).toEqual([]);
    expect(seen).toEqual([
      {
        'messaging.system': 'sluice-memory',
        'messaging.operation.type': 'process',
        'messaging.operation.name': 'process',
        'messaging.destination.name': 'orders',
        'messaging.consumer.group.name': 'tracing',
        'sluice.subscriber': 'orders',
      },
    ]);
    const onward = broker.messages('receipts')[0]!.headers.traceparent as string;
    expect(onward).toMatch(new RegExp(`^00-${parent(3, 4).traceId}-[0-9a-f]{16}-00$`));
    expect(onward).not.toContain(parent(3, 4).spanId);
  });

  it.each([
    ['yes', 'tracing must be true or an object { tracerProvider?, linksMax? }, got "yes"'],
    [{ linksMax: -1 }, 'tracing.linksMax must be an integer from 0 to 1000, got -1'],
    [{ linksMax: 1.5 }, 'tracing.linksMax must be an integer from 0 to 1000, got 1.5'],
    [{ tracerProvider: {} }, 'tracing.tracerProvider must be an OpenTelemetry TracerProvider'],
    [{ sampler: 1 }, 'tracing.sampler must be a known setting (tracerProvider, linksMax), got 1'],
  ])('refuses tracing: %j with CONFIG_INVALID naming the field and value', (tracing, message) => {
    expectError(() => new App({ name: 'bad', tracing: tracing as AppOptions['tracing'] }), 'CONFIG_INVALID', message);
  });

  it('says how to install @opentelemetry/api when it is missing (DEPENDENCY_MISSING)', async () => {
    const missing = Object.assign(new Error("Cannot find package '@opentelemetry/api'"), {
      code: 'ERR_MODULE_NOT_FOUND',
    });
    const loading = loadOtelApi(() => Promise.reject(missing));
    await expect(loading).rejects.toMatchObject({ code: 'DEPENDENCY_MISSING' });
    await expect(loadOtelApi(() => Promise.reject(missing))).rejects.toThrow(
      'run `npm install @opentelemetry/api@^1.9.0`',
    );
    const other = new Error('broken');
    await expect(loadOtelApi(() => Promise.reject(other))).rejects.toBe(other);
  });
});
