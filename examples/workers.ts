/**
 * Workers, the decorator way.
 *
 * - `@subscriber('orders', { workers: 4 })`: a pool of four workers. Each charge waits one second on a
 *   (fake) payment provider; four orders take about one second together, not four.
 * - `@subscriber('refunds', { workers: 4, byKey: true })`: the same four workers as four lanes by partition
 *   key. One customer's refunds are paid back in order; different customers' run at once.
 *
 * Run from the repository root:
 *   node --no-warnings --loader ts-node/esm examples/workers.ts
 * The builder-chain version of the same app is examples/manual/workers.ts.
 */
import 'reflect-metadata';
import { App, HandlerOutcome, MemoryBroker, jsonLogger, subscriber, type Context } from '../src/index.js';
import { silentLogger } from '../src/testing.js';

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

/** What the handlers did, for the printout. */
const charged: string[] = [];
const paidBack = new Map<string, string[]>();
let running = 0;
let mostAtOnce = 0;

class Billing {
  /** Up to four orders are charged at once; the next one waits for a free worker. */
  @subscriber('orders', { workers: 4 })
  async bill(order: Order, _ctx: Context) {
    await provider.charge(order);
    charged.push(order.id);
    return HandlerOutcome.ack();
  }

  /** Four lanes by the message's partition key: one customer's refunds in order, different customers' at once. */
  @subscriber('refunds', { workers: 4, byKey: true })
  async refund(refund: Refund, ctx: Context) {
    mostAtOnce = Math.max(mostAtOnce, ++running);
    await provider.payBack(refund);
    running--;
    const list = paidBack.get(ctx.message.key!) ?? [];
    paidBack.set(ctx.message.key!, [...list, refund.id]);
    // returning nothing is ack
  }
}

// Logs are off to keep the printout readable; set SLUICE_LOG_LEVEL=info to see them (JSON lines on stderr).
const logger = process.env.SLUICE_LOG_LEVEL ? jsonLogger() : silentLogger;
const broker = new MemoryBroker();
const app = new App({ name: 'billing', version: '0.1.0', logger }).withBroker(broker, (b) => b.include(Billing));
await app.start();

// A pool of four: four one-second charges.
let t0 = performance.now();
for (let i = 1; i <= 4; i++) await broker.publish('orders', { id: `o${i}`, customer: `cust-${i}`, cents: 100 * i });
await app.idle();
const poolMs = performance.now() - t0;
console.log(
  `orders: charged ${charged.join(', ')} in ${(poolMs / 1000).toFixed(2)} s with 4 workers (one at a time: 4 s)`,
);

// Four lanes by key: three customers, three refunds each, published interleaved. The key (the memory
// broker keeps it in header `partition-key`) picks the lane.
t0 = performance.now();
let n = 0;
for (let round = 1; round <= 3; round++) {
  for (const customer of ['cust-1', 'cust-2', 'cust-3']) {
    n++;
    await broker.publish('refunds', { id: `r${n}`, customer, cents: 50 }, { key: customer });
  }
}
await app.idle();
const lanesMs = performance.now() - t0;
console.log('refunds, 4 lanes by customer (each pay-back takes 300 ms):');
for (const [customer, ids] of [...paidBack].sort(([a], [b]) => a.localeCompare(b))) {
  console.log(`  ${customer}: ${ids.join(' -> ')}`);
}
console.log(
  `  ${n} refunds in ${(lanesMs / 1000).toFixed(2)} s, up to ${mostAtOnce} customers at once (one at a time: ${(n * 0.3).toFixed(1)} s)`,
);

await app.stop();
