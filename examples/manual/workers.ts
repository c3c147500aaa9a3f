/**
 * Workers, the builder way: the same app as examples/workers.ts, without decorators.
 *
 * - `subscriber('orders', bill).workers(4).build()`: a pool of four workers; four one-second charges take
 *   about one second together.
 * - `subscriber('refunds', refund).workersByKey(4).build()`: four lanes by partition key; one customer's
 *   refunds in order, different customers' at once.
 *
 * Run from the repository root:
 *   node --no-warnings --loader ts-node/esm examples/manual/workers.ts
 */
import { App, HandlerOutcome, MemoryBroker, jsonLogger, subscriber, type Context } from '../../src/index.js';
import { silentLogger } from '../../src/testing.js';

interface Order {
  id: string;
  customer: string;
  cents: number;
}
interface Refund {
  id: string;
  customer: string;
  cents: number;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A fake payment provider: a charge takes one second, a pay-back 300 ms. */
const provider = {
  charge: (_order: Order) => sleep(1000),
  payBack: (_refund: Refund) => sleep(300),
};

const charged: string[] = [];
const paidBack = new Map<string, string[]>();
let running = 0;
let mostAtOnce = 0;

/** Charges one order. Its name, `bill`, is the subscriber's default name. */
async function bill(order: Order, _ctx: Context) {
  await provider.charge(order);
  charged.push(order.id);
  return HandlerOutcome.ack();
}

/** Pays one refund back; returning nothing is ack. */
async function refund(r: Refund, ctx: Context) {
  mostAtOnce = Math.max(mostAtOnce, ++running);
  await provider.payBack(r);
  running--;
  paidBack.set(ctx.message.key!, [...(paidBack.get(ctx.message.key!) ?? []), r.id]);
}

// Logs are off to keep the printout readable; set SLUICE_LOG_LEVEL=info to see them (JSON lines on stderr).
const logger = process.env.SLUICE_LOG_LEVEL ? jsonLogger() : silentLogger;
const broker = new MemoryBroker();
const app = new App({ name: 'billing', version: '0.1.0', logger }).withBroker(broker, (b) => {
  /** Up to four orders are charged at once; the next one waits for a free worker. */
  b.include(subscriber('orders', bill).workers(4).build());
  /** Four lanes by the message's partition key: one customer's refunds in order, different customers' at once. */
  b.include(subscriber('refunds', refund).workersByKey(4).build());
});
await app.start();

let t0 = performance.now();
for (let i = 1; i <= 4; i++) await broker.publish('orders', { id: `o${i}`, customer: `cust-${i}`, cents: 100 * i });
await app.idle();
console.log(
  `orders: charged ${charged.join(', ')} in ${((performance.now() - t0) / 1000).toFixed(2)} s with 4 workers (one at a time: 4 s)`,
);

t0 = performance.now();
let n = 0;
for (let round = 1; round <= 3; round++) {
  for (const customer of ['cust-1', 'cust-2', 'cust-3']) {
    n++;
    await broker.publish('refunds', { id: `r${n}`, customer, cents: 50 }, { key: customer });
  }
}
await app.idle();
console.log('refunds, 4 lanes by customer (each pay-back takes 300 ms):');
for (const [customer, ids] of [...paidBack].sort(([a], [b]) => a.localeCompare(b)))
  console.log(`  ${customer}: ${ids.join(' -> ')}`);
console.log(
  `  ${n} refunds in ${((performance.now() - t0) / 1000).toFixed(2)} s, up to ${mostAtOnce} customers at once (one at a time: ${(n * 0.3).toFixed(1)} s)`,
);

await app.stop();
