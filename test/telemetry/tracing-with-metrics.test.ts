/**
 * Tracing and metrics together: the `record` seam tells both of each attempt's outcome, in one call, and the
 * outcome the span carries is the one metrics count.
 */
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { App, HandlerOutcome, MemoryBroker, subscriber } from '../../src/index.js';
import { ManualClock, silentLogger } from '../../src/testing.js';
import { Counter } from '../helpers.js';
import { valueOf } from './metrics-text.js';

describe('tracing beside metrics', () => {
  it('gives each attempt a span whose outcome is the one metrics count', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const registry = new Registry();
    const clock = new ManualClock(0);
    const broker = new MemoryBroker();
    const attempts = new Counter();
    const app = new App({
      name: 'both',
      logger: silentLogger,
      clock,
      metrics: { registry },
      tracing: { tracerProvider: provider },
    }).withBroker(broker, (b) =>
      b.include(
        subscriber('orders', async (v: { n: number }, ctx) => {
          attempts.add();
          if (v.n === 1) return HandlerOutcome.reject('no');
          if (v.n === 2 && ctx.message.attempt === 1) throw new Error('once');
        })
          .name('orders')
          .retry({ attempts: 2, backoff: { initialMs: 10, maxMs: 10 } })
          .build(),
      ),
    );
    await app.start();
    for (let n = 0; n < 3; n++) await broker.publish('orders', { n });
    for (let i = 0; i < 20 && attempts.value < 4; i++) await clock.advance(10);
    await app.idle();
    await app.stop();
    await provider.forceFlush();
    const outcomes = exporter.getFinishedSpans().map((s) => s.attributes['sluice.outcome'] as string);
    const counted = async (outcome: string) =>
      valueOf(await registry.metrics(), 'sluice_handled_total', { subscriber: 'orders', topic: 'orders', outcome });
    expect(outcomes.sort()).toEqual(['ack', 'ack', 'reject', 'retry']);
    for (const outcome of ['ack', 'reject', 'retry'])
      expect(await counted(outcome)).toBe(outcomes.filter((o) => o === outcome).length);
  });
});
