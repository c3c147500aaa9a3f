/**
 * Observability: an app with Prometheus metrics, health probes on a small HTTP server, and OpenTelemetry traces.
 *
 * - `metrics: true`: the app's metrics in a registry of its own (prom-client, loaded only because metrics
 *   were asked for), served at `/metrics` by the `http` server.
 * - `http: { port }`: `/health/live` and `/health/ready` for Kubernetes probes, and `/metrics`.
 * - `health`: when the app stops being live (a consumer that has not polled, a handler that has run too long).
 * - `tracing`: a span per attempt at a handler, child of the message's `traceparent`, and the trace context in
 *   what the handler publishes (`@opentelemetry/api`, loaded only because tracing was asked for). The SDK here
 *   is the repository's devDependency, exporting to memory; a service registers its own (NodeSDK, OTLP).
 *
 * The example runs a small workload on the memory broker (some handlers fail once, one message is rejected to
 * the dead-letter topic), then reads its own endpoints as Prometheus and the kubelet would. Set PORT to pick
 * the port (the default, 0, lets the system pick one), and KEEP=1 to keep it serving until Ctrl-C.
 *
 * Run from the repository root:
 *   node --no-warnings --loader ts-node/esm examples/observability.ts
 */
import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { App, HandlerOutcome, MemoryBroker, subscriber, type Context } from '../src/index.js';
import { silentLogger } from '../src/testing.js';

interface Order {
  id: number;
}

// The OpenTelemetry SDK: spans kept in memory, and a context manager so that the span is active across awaits.
const exporter = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());

const broker = new MemoryBroker({ partitions: 2 });
const orders = subscriber('orders', async (order: Order, ctx: Context) => {
  if (order.id === 13) return HandlerOutcome.reject('unlucky');
  if (order.id % 10 === 0 && ctx.message.attempt === 1) throw new Error('flaky the first time');
  await ctx.publish('receipts', { id: order.id }); // carries the attempt's trace context
  return HandlerOutcome.ack();
})
  .name('orders')
  .workers(4)
  .retry({ attempts: 3, backoff: { initialMs: 5, maxMs: 20 } });

const app = new App({
  name: 'observability-example',
  logger: silentLogger,
  metrics: true,
  http: { port: Number(process.env.PORT ?? 0), host: '127.0.0.1' },
  health: { maxPollGapMs: 60_000, maxInFlightMs: 30_000 },
  tracing: { tracerProvider },
}).withBroker(broker, (b) => b.include(orders.build()));

await app.start();
const base = `http://127.0.0.1:${app.httpPort()}`;
console.log(`serving ${base}/metrics, ${base}/health/live and ${base}/health/ready`);

// Order 1 comes from a traced producer: its traceparent header names the producer's span.
const producer = tracerProvider.getTracer('producer').startSpan('send orders');
const { traceId, spanId } = producer.spanContext();
await broker.publish('orders', { id: 1 }, { headers: { traceparent: `00-${traceId}-${spanId}-01` } });
producer.end();
for (let id = 2; id <= 50; id++) await broker.publish('orders', { id });
await app.idle();

const check = (what: string, ok: boolean): void => console.log(`  ${ok ? 'yes' : 'NO '} ${what}`);
const metrics = await (await fetch(`${base}/metrics`)).text();
const line = (name: string, outcome: string) =>
  metrics.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(`outcome="${outcome}"`));
console.log('from /metrics:');
for (const outcome of ['ack', 'retry', 'reject']) console.log(`  ${line('sluice_handled_total', outcome)}`);
check(
  '49 acked, 5 retried once, 1 rejected',
  /ack"} 49$/.test(line('sluice_handled_total', 'ack') ?? '') &&
    /retry"} 5$/.test(line('sluice_handled_total', 'retry') ?? '') &&
    /reject"} 1$/.test(line('sluice_handled_total', 'reject') ?? ''),
);

const live = await fetch(`${base}/health/live`);
const ready = await fetch(`${base}/health/ready`);
console.log(`/health/live: ${live.status} ${(await live.text()).trim()}`);
console.log(`/health/ready: ${ready.status} ${(await ready.text()).trim()}`);
check('live and ready', live.status === 200 && ready.status === 200);
const health = await app.health();
console.log('app.health():', JSON.stringify(health.subscribers));
check(
  'no lag left',
  health.subscribers.every((s) => s.lag === 0),
);

await tracerProvider.forceFlush();
const spans = exporter.getFinishedSpans().filter((s) => s.name === 'process orders');
const first = spans.find((s) => s.parentSpanContext?.spanId === spanId);
console.log(`traces: ${spans.length} spans "process orders"; order 1's:`, JSON.stringify(first?.attributes));
check('a span per attempt (50 messages, 5 retried)', spans.length === 55);
check("order 1's span is a child of its producer's span, in its trace", first?.spanContext().traceId === traceId);
const receipt = broker.messages('receipts').find((m) => m.headers.traceparent?.includes(traceId));
check("order 1's receipt carries its span's trace context", receipt !== undefined);

if (process.env.KEEP === '1') await new Promise((resolve) => process.once('SIGINT', resolve));
await app.stop();
