/**
 * Tracing against the real broker: one trace joins a plain kafkajs producer, the Sluice subscriber that
 * handles its message, and the message the handler publishes onward, read by a plain kafkajs consumer.
 */
import { SpanKind, context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Kafka, Partitioners, logLevel, type KafkaMessage } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { App, subscriber } from '../../src/index.js';
import { silentLogger } from '../../src/testing.js';
import { parseTraceparent } from '../../src/telemetry/tracing/trace-context.js';
import { uniqueTopic } from '../contract/broker-contract.js';
import { closePlatformatic, kafkaClients } from './clients.js';
import { closeAll, kafkaBrokers } from './fixture.js';

describe.skipIf(!kafkaBrokers).each(kafkaClients)('tracing on Kafka ($name)', (client) => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const contextManager = new AsyncLocalStorageContextManager();
  beforeAll(() => void context.setGlobalContextManager(contextManager.enable()));
  afterAll(async () => {
    context.disable();
    await Promise.all([closeAll(), closePlatformatic()]);
  });
  const kafka = () => new Kafka({ clientId: 'plain', brokers: [kafkaBrokers!], logLevel: logLevel.NOTHING });

  it("joins a plain producer's trace: the consumer span is its child, and the onward message the span's", async () => {
    const topic = uniqueTopic('traced');
    const onward = `${topic}.onward`;
    const broker = client.broker();
    await broker.createTopic(topic, 2);
    await broker.createTopic(onward, 1);
    const app = new App({
      name: topic,
      logger: silentLogger,
      shutdownTimeoutMs: 5_000,
      tracing: { tracerProvider: provider },
    }).withBroker(broker, (b) =>
      b.include(
        subscriber(topic, (v: { id: number }, ctx) => ctx.publish(onward, { id: v.id, seen: true }))
          .name('relay')
          .build(),
      ),
    );
    // A plain kafkajs consumer of the onward topic: what any downstream service reads.
    const reader = kafka().consumer({ groupId: `${topic}.reader`, maxWaitTimeInMs: 100 });
    let received!: (m: KafkaMessage) => void;
    const read = new Promise<KafkaMessage>((resolve) => (received = resolve));
    await reader.connect();
    await reader.subscribe({ topic: onward, fromBeginning: true });
    await reader.run({ eachMessage: async ({ message }) => received(message) });
    try {
      await app.start();
      // A plain kafkajs producer, traced by hand as an instrumented producer would be: its span's context in
      // the message's traceparent header.
      const sending = provider.getTracer('producer').startSpan(`send ${topic}`, { kind: SpanKind.PRODUCER });
      const sc = sending.spanContext();
      const producer = kafka().producer({ createPartitioner: Partitioners.DefaultPartitioner });
      await producer.connect();
      await producer.send({
        topic,
        messages: [
          {
            key: 'order-1',
            value: JSON.stringify({ id: 1 }),
            headers: { traceparent: `00-${sc.traceId}-${sc.spanId}-01` },
          },
        ],
      });
      await producer.disconnect();
      sending.end();
      const message = await read;
      await app.idle();
      await provider.forceFlush();
      const consumerSpan = exporter.getFinishedSpans().find((s) => s.kind === SpanKind.CONSUMER)!;
      const own = consumerSpan.spanContext();
      const carried = parseTraceparent(message.headers?.traceparent?.toString());
      // One trace: the producer's, the consumer span's and the onward message's.
      expect(own.traceId).toBe(sc.traceId);
      expect(carried?.traceId).toBe(sc.traceId);
      expect(consumerSpan.parentSpanContext?.spanId).toBe(sc.spanId);
      expect(carried?.spanId).toBe(own.spanId);
      expect(JSON.parse(message.value!.toString())).toEqual({ id: 1, seen: true });
      expect(consumerSpan.name).toBe(`process ${topic}`);
      expect(consumerSpan.attributes).toMatchObject({
        'messaging.system': 'kafka',
        'messaging.destination.name': topic,
        'messaging.consumer.group.name': topic,
        'messaging.kafka.message.key': 'order-1',
        'messaging.kafka.offset': 0,
        'sluice.subscriber': 'relay',
        'sluice.outcome': 'ack',
      });
      expect(['0', '1']).toContain(consumerSpan.attributes['messaging.destination.partition.id']);
      expect(trace.getActiveSpan()).toBeUndefined(); // nothing leaked into the test's own context
    } finally {
      await reader.disconnect();
      await app.stop();
    }
  });
});
