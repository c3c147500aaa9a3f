/**
 * Routers: a topic prefix and default settings for everything they include, nested routers, and a
 * subscriber's own settings winning over its routers'.
 *
 * Run from the repository root:
 *   node --no-warnings --loader ts-node/esm examples/routers.ts
 */
import 'reflect-metadata';
import { App, MemoryBroker, Router, jsonLogger, subscriber, type Context } from '../src/index.js';
import { silentLogger } from '../src/testing.js';

const handled: string[] = [];
const note = (_payload: unknown, ctx: Context): void => void handled.push(ctx.message.topic);

class Billing {
  /** Takes the router's defaults: billing.orders, 8 workers. */
  @subscriber('orders')
  bill(order: unknown, ctx: Context) {
    note(order, ctx);
  }

  /** Its own settings win: one worker, its own retry policy. */
  @subscriber('audit', { workers: 1, retry: { attempts: 10 } })
  audit(entry: unknown, ctx: Context) {
    note(entry, ctx);
  }
}

// Prefix and defaults for what the router includes.
const billing = new Router({
  prefix: 'billing.',
  workers: 4,
  retry: { attempts: 3, backoff: { initialMs: 50, maxMs: 1_000 } },
});
billing.include(Billing);
billing.workers(8); // chainable, like every builder; replaces the 4 above

// A nested router: prefixes concatenate (billing.eu.*), its defaults win over the outer router's.
const eu = new Router({ prefix: 'eu.', group: 'billing-eu' }).workersByKey(2);
eu.include(
  subscriber('invoices', function invoice(i: unknown, ctx: Context) {
    note(i, ctx);
  }).build(),
  // The decoder first: its type is the handler's payload (`v: { at: string }`).
  subscriber('vat')
    .decode({ parse: (value: unknown) => value as { at: string } })
    .workers(3) // own: a pool of 3
    .handle(function vat(v, ctx) {
      note(v.at, ctx);
    }),
);
billing.include(eu);

// Logs are off to keep the printout readable; set SLUICE_LOG_LEVEL=info to see them (JSON lines on stderr).
const logger = process.env.SLUICE_LOG_LEVEL ? jsonLogger() : silentLogger;
const broker = new MemoryBroker();
const app = new App({ name: 'billing', logger, defaults: { timeoutMs: 10_000 } }) // app-wide defaults, weakest of all
  .withBroker(broker, (b) => b.include(billing));

// The settings each subscriber ends up with. Note Billing.audit: `retry` merges field by field, so its own
// 10 attempts keep the router's backoff (50 ms -> 1 s).
const row = (...cells: string[]): string => cells.map((c, i) => c.padEnd([15, 21, 12, 10, 20, 9][i] ?? 0)).join('');
console.log(row('subscriber', 'topic', 'group', 'dispatch', 'retry', 'timeout', 'deadLetter'));
for (const s of app.subscribers()) {
  const retry = `${s.retry.attempts} x ${s.retry.initialMs}->${s.retry.maxMs} ms`;
  console.log(
    row(
      s.name,
      s.topic,
      s.group,
      `${s.byKey ? 'lanes' : 'pool'}(${s.workers})`,
      retry,
      `${s.timeoutMs} ms`,
      String(s.deadLetter),
    ),
  );
}

await app.start();
for (const topic of ['billing.orders', 'billing.audit', 'billing.eu.invoices', 'billing.eu.vat']) {
  await broker.publish(topic, { at: topic }, { key: 'cust-1' });
}
await broker.publish('orders', { at: 'orders' }); // no subscriber reads the unprefixed topic
await app.idle();
console.log(`handled: ${handled.sort().join(', ')}`);
await app.stop();
