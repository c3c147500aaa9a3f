/**
 * `app.asyncapi()`: the document an app gives of itself, checked by the official AsyncAPI parser (no error,
 * no warning) and read for what a user of the document relies on.
 */
import 'reflect-metadata';
import { Parser } from '@asyncapi/parser';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { KafkaBroker } from '../../src/brokers/kafka/index.js';
import type { Broker } from '../../src/adapter.js';
import { App, MemoryBroker, subscriber, topic, type Context } from '../../src/index.js';
import { silentLogger } from '../../src/testing.js';

const Order = z.object({ id: z.string(), cents: z.number().int() });
const orders = topic('orders', { schema: Order, key: (o) => o.id });
const invoices = topic<{ orderId: string; total: string }>('invoices', {
  schema: z.object({ orderId: z.string(), total: z.string() }),
});
const quotes = topic('quotes', {
  schema: z.object({ cents: z.number() }),
  reply: z.object({ amount: z.string() }),
});

class Quotes {
  @subscriber(quotes, { replies: true })
  quote(q: { cents: number }, ctx: Context): { amount: string } {
    void ctx;
    return { amount: String(q.cents) };
  }
}

function shop(broker: Broker = new MemoryBroker()): App {
  return new App({ name: 'shop', version: '1.4.0', description: 'Bills orders.', logger: silentLogger }).withBroker(
    broker,
    (b) =>
      b.include(
        subscriber(orders, (o) => ({ orderId: o.id, total: String(o.cents) }))
          .publishTo(invoices)
          .workersByKey(4)
          .build(),
        subscriber('reminders', () => {})
          .name('remind')
          .pace({ debounce: '5s' })
          .retry({ attempts: 3 })
          .build(),
        subscriber('audit', () => {})
          .deadLetter(false)
          .build(),
        Quotes,
      ),
  );
}

/** What the parser says of `doc` at warning level or worse (0 error, 1 warning). */
async function complaints(doc: unknown): Promise<string[]> {
  const { diagnostics } = await new Parser().parse(JSON.stringify(doc));
  return diagnostics
    .filter((d) => Number(d.severity) <= 1)
    .map((d) => `${d.code} at ${d.path.join('.')}: ${d.message}`);
}

type Doc = {
  info: Record<string, unknown>;
  servers: Record<string, { host: string; protocol: string }>;
  channels: Record<string, { address: string | null; messages: Record<string, { payload?: unknown }> }>;
  operations: Record<string, Record<string, unknown>>;
};

describe('app.asyncapi()', () => {
  it('is a valid AsyncAPI 3.0 document: the parser finds no error and no warning', async () => {
    const app = shop();
    const doc = app.asyncapi();
    expect(doc.asyncapi).toBe('3.0.0');
    expect(await complaints(doc)).toEqual([]);
    expect(
      await complaints(shop(new KafkaBroker({ brokers: ['127.0.0.1:9092', '127.0.0.1:9093'] })).asyncapi()),
    ).toEqual([]);
  });

  it('has a channel per topic read, published, dead-lettered or replied on, with payloads from the schemas', () => {
    const doc = shop().asyncapi() as unknown as Doc;
    expect(doc.info).toEqual({ title: 'shop', version: '1.4.0', description: 'Bills orders.' });
    expect(Object.values(doc.channels).map((c) => c.address)).toEqual(
      expect.arrayContaining(['orders', 'invoices', 'orders.dlq', 'reminders', 'reminders.dlq', 'audit', 'quotes']),
    );
    expect(doc.channels['audit.dlq']).toBeUndefined(); // deadLetter(false)
    expect(doc.channels.orders!.messages.message!.payload).toMatchObject({
      type: 'object',
      properties: { id: { type: 'string' }, cents: { type: 'integer' } },
      required: ['id', 'cents'],
    });
    expect(doc.channels.invoices!.messages.message!.payload).toMatchObject({
      properties: { total: { type: 'string' } },
    });
    expect(doc.channels.reminders!.messages.message!.payload).toBeUndefined(); // plain JSON: no schema to tell
  });

  it('says what each subscriber does: receive, send its results and dead letters, reply; x-sluice-subscriber', () => {
    const doc = shop().asyncapi() as unknown as Doc;
    const ops = doc.operations;
    expect(ops['orders.receive']).toMatchObject({
      action: 'receive',
      channel: { $ref: '#/channels/orders' },
      'x-sluice-subscriber': { concurrency: 'lanes', workers: 4, group: 'shop', deadLetter: 'orders.dlq' },
    });
    expect(ops['orders.publish.invoices']).toMatchObject({ action: 'send', channel: { $ref: '#/channels/invoices' } });
    expect(ops['orders.deadLetter']).toMatchObject({ action: 'send', channel: { $ref: '#/channels/orders.dlq' } });
    expect(ops['remind.receive']!['x-sluice-subscriber']).toMatchObject({
      retry: { attempts: 3 },
      pace: { kind: 'debounce', windowMs: 5_000 },
    });
    expect(ops['Quotes.quote.receive']).toMatchObject({
      reply: { address: { location: '$message.header#/x-sluice-reply-to' } },
    });
    expect(ops['audit.deadLetter']).toBeUndefined();
  });

  it('names the servers from the brokers, and the Kafka group in the operation bindings', () => {
    const doc = shop(new KafkaBroker({ brokers: ['127.0.0.1:9092', '127.0.0.1:9093'] })).asyncapi() as unknown as Doc;
    expect(doc.servers).toEqual({
      kafka: expect.objectContaining({ host: '127.0.0.1:9092,127.0.0.1:9093', protocol: 'kafka' }),
    });
    expect(doc.operations['orders.receive']!.bindings).toEqual({
      kafka: { groupId: { type: 'string', enum: ['shop'] }, bindingVersion: '0.5.0' },
    });
    expect(shop().asyncapi().servers).toEqual({ memory: expect.objectContaining({ protocol: 'memory' }) });
  });

  it('includes the topics of app.publisher and app.request, a request with its reply on the reply topic', async () => {
    const app = shop();
    await app.start();
    try {
      app.publisher(orders);
      await app.request(quotes, { cents: 5 }, { timeoutMs: 5_000 });
    } finally {
      await app.stop();
    }
    const doc = app.asyncapi() as unknown as Doc;
    expect(doc.operations['publish.orders']).toMatchObject({ action: 'send', channel: { $ref: '#/channels/orders' } });
    expect(doc.operations['request.quotes']).toMatchObject({
      action: 'send',
      reply: { channel: { $ref: '#/channels/shop.replies' } },
    });
    expect(doc.channels['shop.replies']!.messages.message!.payload).toMatchObject({
      properties: { amount: { type: 'string' } },
    });
    expect(await complaints(doc)).toEqual([]);
  });
});
