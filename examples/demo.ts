/**
 * The Sluice demo (`npm run demo`): a small billing app on the embedded defaults.
 *
 * - `orders`: a pool of 8 workers charges each order on a fake payment provider (50-150 ms), then
 *   publishes an invoice onward with `ctx.publish`.
 * - `invoices`: 4 lanes by customer book the invoices: one customer's invoices in the order they were
 *   published, different customers' at once.
 * - `statements`: a paced subscriber reads the invoices too (its own consumer group) and gathers each
 *   customer's into statements: a batch per customer of up to 5 invoices, or whatever came within 300 ms
 *   of the first. Its coordinators are journaled in the embedded default store, a file store under
 *   `.sluice/billing`; an invoice's offset is committed once it is durably part of a statement.
 * - One poison order fails every attempt: after 3 attempts it ends in the dead-letter topic `orders.dlq`.
 *   A malformed one does not pass the decoder's schema and goes there at once.
 *
 * Everything runs in this process on the embedded defaults: the memory broker (a real broker in miniature
 * with partitions, offsets and consumer groups) and the file store.
 *
 * Two settings, both off by default, make it something to watch (scripts/observability/picture.ts uses them
 * for the picture in docs/observability.md):
 * - `SLUICE_DEMO_METRICS_PORT=<port>`: Prometheus metrics (`metrics: true`) served at
 *   `http://127.0.0.1:<port>/metrics` (0: a port the system picks; the demo prints it).
 * - `SLUICE_DEMO_SECONDS=<n>`: after the first 51 orders, orders keep coming for n seconds, in waves: calm,
 *   a burst faster than the 8 workers charge, calm, a bigger burst, calm, and a quiet last seventh. As in the
 *   first 51, the provider refuses every order numbered 25 modulo 100 (o-125, o-225...), and every order
 *   numbered 51 modulo 100 is malformed.
 *
 * Run from the repository root: `npm run demo`, or
 *   node --no-warnings --loader ts-node/esm examples/demo.ts
 */
import 'reflect-metadata';
import { rmSync } from 'node:fs';
import { App, ERROR_HEADER, HandlerOutcome, MemoryBroker, jsonLogger, subscriber, type Context } from '../src/index.js';
import { silentLogger } from '../src/testing.js';

interface Order {
  id: string;
  customer: string;
  cents: number;
}
interface Invoice {
  orderId: string;
  customer: string;
  cents: number;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A fake payment provider: 50-150 ms a charge; it refuses order o-25 (and o-125, o-225...) every time. */
async function charge(order: Order): Promise<void> {
  const n = Number(order.id.slice(2));
  await sleep(50 + ((n * 37) % 100));
  if (n % 100 === 25) throw new Error(`payment provider refused ${order.id}`);
}

/** Checks an order's shape: a decoder with `parse` gets the JSON value (a zod schema fits here too). */
const orderSchema = {
  parse(value: unknown): Order {
    const o = (value ?? {}) as Record<string, unknown>;
    if (typeof o.id !== 'string') throw new TypeError('order: id must be a string');
    if (typeof o.customer !== 'string') throw new TypeError(`order ${o.id}: customer must be a string`);
    if (!Number.isInteger(o.cents))
      throw new TypeError(`order ${o.id}: cents must be an integer, got ${JSON.stringify(o.cents)}`);
    return o as unknown as Order;
  },
};

class Billing {
  readonly booked = new Map<string, string[]>();
  charged = 0;
  private running = 0;
  mostAtOnce = 0;

  /** Up to eight orders are charged at once; each one, once paid, becomes an invoice. */
  @subscriber('orders', {
    workers: 8,
    decode: orderSchema,
    retry: { attempts: 3, backoff: { initialMs: 20, maxMs: 100 } },
  })
  async bill(order: Order, ctx: Context) {
    this.mostAtOnce = Math.max(this.mostAtOnce, ++this.running);
    try {
      await charge(order);
    } finally {
      this.running--;
    }
    this.charged++;
    await ctx.publish(
      'invoices',
      { orderId: order.id, customer: order.customer, cents: order.cents } satisfies Invoice,
      { key: order.customer },
    );
    return HandlerOutcome.ack();
  }

  readonly statements: { runId: string; customer: string; orders: string[] }[] = [];

  /** Per customer, up to 5 invoices or 300 ms from the first: one statement, every invoice in order. */
  @subscriber('invoices', {
    group: 'statements',
    key: (m) => (m.value as Invoice).customer,
    pace: { batch: { max: 5, wait: '300 ms' } },
  })
  async statement(invoices: Invoice[], ctx: Context) {
    this.statements.push({ runId: ctx.run!.id, customer: ctx.run!.key, orders: invoices.map((i) => i.orderId) });
  }

  /** Four lanes by customer: one customer's invoices are booked in order. */
  @subscriber('invoices', { workers: 4, byKey: true })
  async book(invoice: Invoice) {
    await sleep(10);
    this.booked.set(invoice.customer, [...(this.booked.get(invoice.customer) ?? []), invoice.orderId]);
  }
}

/**
 * Orders from number `first` on for `seconds`, in waves (orders a second, over sevenths of the time): 20,
 * 120, 20, 20, 160, 20, then none. The 8 workers charge about 80 a second: the bursts outrun them, and the
 * calm after each lets them catch up.
 */
async function publishWaves(seconds: number, first: number): Promise<void> {
  const perSecond = [20, 120, 20, 20, 160, 20, 0];
  const start = performance.now();
  let n = first;
  let due = 0; // orders owed: each wave's rate times the time it has run
  for (let at = start, now = start; now - start < seconds * 1000; at = now, now = performance.now()) {
    due += (perSecond[Math.floor(((now - start) / (seconds * 1000)) * 7)]! * (now - at)) / 1000;
    for (; due >= 1; due--, n++) {
      const customer = customers[n % customers.length]!;
      const cents = n % 100 === 51 ? 'a lot' : 100 + (n % 1000);
      await broker.publish('orders', { id: `o-${n}`, customer, cents }, { key: customer });
    }
    await sleep(100);
  }
}

// Logs are off to keep the printout short; set SLUICE_LOG_LEVEL=info to see them (JSON lines on stderr).
const logger = process.env.SLUICE_LOG_LEVEL ? jsonLogger() : silentLogger;
const broker = new MemoryBroker({ partitions: 3 });
// The memory broker starts empty on every run, its offsets from 0 again, while the file store keeps what the
// last run journaled, including the broker offsets it has seen (so that a redelivery joins once). A fresh
// broker with an old store would look like redeliveries: start the store afresh too.
rmSync('.sluice/billing', { recursive: true, force: true });
const billing = new Billing();
const metricsPort = process.env.SLUICE_DEMO_METRICS_PORT;
const metrics = metricsPort ? { metrics: true as const, http: { port: Number(metricsPort), host: '127.0.0.1' } } : {};
const app = new App({ name: 'billing', version: '0.1.0', logger, ...metrics }).withBroker(broker, (b) =>
  b.include(billing),
);

await app.start();
if (metricsPort) console.log(`metrics: http://127.0.0.1:${app.httpPort()}/metrics`);
const t0 = performance.now();
const customers = ['cust-1', 'cust-2', 'cust-3', 'cust-4', 'cust-5', 'cust-6'];
for (let i = 1; i <= 50; i++) {
  const customer = customers[i % customers.length]!;
  await broker.publish('orders', { id: `o-${i}`, customer, cents: 100 + i }, { key: customer });
}
// A malformed order: the schema refuses it, so it goes to orders.dlq at once (DECODE_FAILED).
await broker.publish('orders', { id: 'o-51', customer: 'cust-1', cents: 'a lot' }, { key: 'cust-1' });
await publishWaves(Number(process.env.SLUICE_DEMO_SECONDS ?? 0), 52);
await app.idle();
const seconds = ((performance.now() - t0) / 1000).toFixed(2);
// Statements wait for their batch's time on the system clock: let the last windows close.
while (billing.statements.reduce((n, s) => n + s.orders.length, 0) < billing.charged) {
  await sleep(50);
  await app.idle();
}

// Were one customer's invoices booked in the order they were published on `invoices`?
const published = new Map<string, string[]>();
for (const inv of broker.values<Invoice>('invoices'))
  published.set(inv.customer, [...(published.get(inv.customer) ?? []), inv.orderId]);
const inOrder = [...published].every(([customer, ids]) => ids.join() === billing.booked.get(customer)?.join());
const bookedCount = [...billing.booked.values()].reduce((n, ids) => n + ids.length, 0);
const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);

console.log(
  `billing demo: ${broker.messages('orders').length} orders from ${customers.length} customers on the memory broker (3 partitions)`,
);
console.log(
  `  orders    charged ${billing.charged} with a pool of 8 workers (at most ${billing.mostAtOnce} at once) in ${seconds} s`,
);
console.log(
  `  invoices  booked ${bookedCount} in 4 lanes by customer; each customer's in publish order: ${inOrder ? 'yes' : 'NO'}`,
);
const statementsInOrder = [...published].every(
  ([customer, ids]) =>
    ids.join() ===
    billing.statements
      .filter((s) => s.customer === customer)
      .flatMap((s) => s.orders)
      .join(),
);
console.log(
  `  statements ${billing.statements.length} (batches of at most 5 per customer, journaled in .sluice/billing); every invoice in one, in order: ${statementsInOrder ? 'yes' : 'NO'}`,
);
console.log(`             e.g. ${billing.statements[0]!.runId}: ${billing.statements[0]!.orders.join(', ')}`);
const deadLetters = broker.messages('orders.dlq');
for (const m of deadLetters.slice(0, 2)) {
  console.log(`  orders.dlq  ${Buffer.from(m.value).toString('utf8')}`);
  console.log(`              ${ERROR_HEADER}: ${m.headers[ERROR_HEADER]}`);
}
if (deadLetters.length > 2) console.log(`  orders.dlq  and ${deadLetters.length - 2} more`);
for (const topic of ['orders', 'invoices']) {
  const committed = broker.committed(topic === 'invoices' ? 'statements' : 'billing', topic);
  console.log(
    `  committed ${topic.padEnd(9)} ${topic === 'invoices' ? '(statements) ' : ''}${sum(committed)} of ${sum(broker.endOffsets(topic))} (per partition: ${committed.join(', ')})`,
  );
}
await app.stop();
console.log('stopped');
