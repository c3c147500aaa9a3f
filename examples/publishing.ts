/**
 * Publishing: typed topics, a chain of subscribers that publish their results, a typed publisher outside
 * handlers, and request/reply.
 *
 * - `topic(name, { schema, key })`: one value that is both a subscriber's decoder and a producer's type.
 * - `.publishTo(invoices)`: the handler's return value goes on `invoices`; the order counts as done only
 *   once the broker has the invoice. `undefined` publishes nothing; an outcome means what it always means.
 * - `.exactlyOnce()`: the invoice and the order's offset commit together, in one transaction per partition
 *   (on Kafka, a transaction; a reader that reads committed sees each invoice once, whatever crashes).
 * - `app.publisher(orders).publish(order)`: typed, through the publish middlewares and tracing.
 * - `app.request(quotes, q)`: answered by the subscriber marked `replies`, on the app's reply topic.
 *
 * Run from the repository root:
 *   node --no-warnings --loader ts-node/esm examples/publishing.ts
 */
import 'reflect-metadata';
import { z } from 'zod';
import { App, HandlerOutcome, MemoryBroker, SluiceError, jsonLogger, subscriber, topic } from '../src/index.js';
import { silentLogger } from '../src/testing.js';

// Any Standard Schema validator (zod, valibot, arktype) or a `parse` function decodes a topic's messages.
const Order = z.object({ id: z.string(), cents: z.number().int() });
const orders = topic('orders', { schema: Order, key: (o) => o.id });
const invoices = topic<{ orderId: string; total: string }>('invoices', { key: (i) => i.orderId });
const Quote = z.object({ cents: z.number().int(), currency: z.enum(['EUR', 'USD']) });
const quotes = topic('quotes', { schema: Quote, reply: z.object({ amount: z.string() }) });

const issued: string[] = [];

class Quotes {
  /** The decorator form: `replies: true` answers `app.request(quotes, …)` with the return value. */
  @subscriber(quotes, { replies: true })
  quote(q: z.infer<typeof Quote>) {
    const rate = q.currency === 'USD' ? 1.08 : 1;
    return { amount: `${((q.cents / 100) * rate).toFixed(2)} ${q.currency}` };
  }
}

// Logs are off to keep the printout readable; set SLUICE_LOG_LEVEL=info to see them (JSON lines on stderr).
const logger = process.env.SLUICE_LOG_LEVEL ? jsonLogger() : silentLogger;
const broker = new MemoryBroker();
const app = new App({ name: 'billing', logger }).withBroker(broker, (b) =>
  b.include(
    // The order's type comes from the topic's schema; returning anything but an invoice would not compile.
    subscriber(orders, (o) => {
      if (o.cents < 0) return HandlerOutcome.reject('a negative order'); // dead-lettered, nothing published
      if (o.cents === 0) return undefined; // nothing to invoice
      return { orderId: o.id, total: (o.cents / 100).toFixed(2) };
    })
      .publishTo(invoices)
      .workers(4)
      .exactlyOnce(),
    subscriber(invoices, (i) => void issued.push(`${i.orderId}: ${i.total}`)).build(),
    Quotes,
  ),
);
await app.start();

const shop = app.publisher(orders);
for (const [id, cents] of [
  ['o-1', 1250],
  ['o-2', 0],
  ['o-3', -5],
  ['o-4', 99],
] as const)
  await shop.publish({ id, cents });
await app.idle();
console.log('invoices issued:', issued);

const quote = await app.request(quotes, { cents: 1250, currency: 'USD' }, { timeoutMs: 1_000 });
console.log('quote for 12.50 in USD:', quote.amount);

// A request to a topic nobody answers on times out with REQUEST_TIMEOUT.
const nobody = topic<{ q: string }, { a: string }>('nobody');
const timedOut = await app.request(nobody, { q: '?' }, { timeoutMs: 50 }).catch((e: unknown) => e);
console.log('a request nobody answers:', (timedOut as SluiceError).code);
await app.stop();

const check = (what: string, ok: boolean): void => console.log(`${what}: ${ok ? 'yes' : 'NO'}`);
check('two invoices, in order of the orders', issued.join() === 'o-1: 12.50,o-4: 0.99');
check('the negative order dead-lettered', broker.values('orders.dlq').length === 1);
check('the invoice keyed by its order', broker.messages('invoices')[0]?.key === 'o-1');
check('the quote replied', quote.amount === '13.50 USD');
check('the unanswered request timed out', timedOut instanceof SluiceError && timedOut.code === 'REQUEST_TIMEOUT');
check('requests counted', JSON.stringify(app.requestCounts()) === '{"sent":2,"replied":1,"timedOut":1,"late":0}');
