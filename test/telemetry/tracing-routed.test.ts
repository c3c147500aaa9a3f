/**
 * Tracing across instances, with shards owned by partition (memory broker, a memory store standing in for a
 * Kafka store): an `app.send` routed to the owner of its key's partition, and a delivery whose pace key lands
 * in another partition, carry their trace context in the request's headers, and the run that leaves on the
 * owner links to it.
 */
import { context, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { App, ManualClock, MemoryBroker, memoryStore, silentLogger, subscriber } from '../../src/index.js';
import { parseTraceparent } from '../../src/telemetry/tracing/trace-context.js';
import { runIdOf } from '../helpers.js';

const PARTITIONS = 4;
const REQUESTS = 'owners.ev.requests';
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager();
beforeAll(() => void context.setGlobalContextManager(contextManager.enable()));
afterAll(() => context.disable());

/** Two instances of the app `owners`, a batched paced subscriber of `ev`, traced; `byEvent`: its pace key is the event's. */
function instances(byEvent = false) {
  const clock = new ManualClock(1_000_000);
  const broker = new MemoryBroker({ partitions: PARTITIONS, now: () => clock.now() });
  const store = memoryStore({ shards: PARTITIONS, ownership: 'partition' });
  const runs = new Map<string, string>(); // run ID → the instance it ran on
  const make = (name: string) => {
    let sub = subscriber('ev', async (_events: { key: string }[], ctx) => void runs.set(ctx.run!.id, name)).name('ev');
    if (byEvent) sub = sub.key(({ value }) => (value as unknown as { key: string }).key); // the pace key: the event's
    const app = new App({
      name: 'owners',
      logger: silentLogger,
      clock,
      store,
      shutdownTimeoutMs: 1_000,
      tracing: { tracerProvider: provider },
    });
    return app.withBroker(broker, (b) => b.include(sub.pace({ batch: { wait: '1 s' } }).build()));
  };
  return { clock, broker, runs, a: make('a'), b: make('b') };
}

/** A key that the broker puts in partition `p`. */
function keyIn(broker: MemoryBroker, p: number): string {
  for (let i = 0; ; i++) if (broker.partitionOf(`key-${i}`, PARTITIONS) === p) return `key-${i}`;
}

async function runSpans(): Promise<Map<string, ReadableSpan>> {
  await provider.forceFlush();
  const spans = exporter.getFinishedSpans().filter((s) => s.name === 'process ev');
  return new Map(spans.map((s) => [s.attributes['sluice.run.id'] as string, s]));
}

describe('tracing: paced runs across instances', () => {
  it("links a run to the span an app.send was called under, on whichever instance owns the key's partition", async () => {
    exporter.reset();
    const { clock, broker, runs, a, b } = instances();
    await a.start();
    await b.start();
    const senders = new Map<string, string>(); // run ID → the sender's span ID
    for (let p = 0; p < PARTITIONS; p++) {
      const sender = provider.getTracer('test').startSpan(`send ${p}`);
      const send = () => a.send('ev', { key: keyIn(broker, p), event: { key: keyIn(broker, p) } });
      const receipt = await context.with(trace.setSpan(ROOT_CONTEXT, sender), send);
      sender.end();
      senders.set(runIdOf(receipt), sender.spanContext().spanId);
    }
    // The sends of the keys b owns went through the requests topic, each with its sender's traceparent.
    const requests = broker.messages(REQUESTS);
    expect(requests.length).toBeGreaterThan(0);
    expect(requests.length).toBeLessThan(PARTITIONS);
    for (const m of requests) expect([...senders.values()]).toContain(parseTraceparent(m.headers.traceparent)?.spanId);
    await clock.advance(1_000);
    await Promise.all([a.idle(), b.idle()]);
    expect(new Set(runs.values())).toEqual(new Set(['a', 'b'])); // runs left on both instances
    const spans = await runSpans();
    expect(spans.size).toBe(PARTITIONS);
    for (const [runId, spanId] of senders)
      expect(spans.get(runId)!.links.map((l) => l.context.spanId)).toEqual([spanId]);
    await Promise.all([a.stop(), b.stop()]);
  });

  it("links a run to its deliveries' trace contexts, those forwarded from another partition's owner too", async () => {
    exporter.reset();
    const { clock, broker, runs, a, b } = instances(true);
    await a.start();
    await b.start();
    const key = keyIn(broker, 1);
    const producers: string[] = [];
    for (let n = 0; n < 4; n++) {
      const spanId = (0x100 + n).toString(16).padStart(16, '0');
      producers.push(spanId);
      // Each under a message key of its own, so that the deliveries of one pace key land in several partitions.
      const traceparent = `00-${'ab'.repeat(16)}-${spanId}-01`;
      await broker.publish('ev', { key }, { key: `m-${n}`, headers: { traceparent } });
    }
    await Promise.all([a.idle(), b.idle()]);
    expect(broker.messages(REQUESTS).length).toBeGreaterThan(0); // some were forwarded
    await clock.advance(1_000);
    await Promise.all([a.idle(), b.idle()]);
    expect(runs.size).toBe(1);
    const [span] = (await runSpans()).values();
    expect(span!.links.map((l) => l.context.spanId).sort()).toEqual(producers);
    await Promise.all([a.stop(), b.stop()]);
  });
});
