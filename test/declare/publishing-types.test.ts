/**
 * What the types of topics, publishers and requests refuse. The checks below are compiled by `npm run
 * typecheck` (a `@ts-expect-error` that no longer fails to compile fails it); the test runs what compiles.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { App, HandlerOutcome, Router, subscriber, topic, type Publisher } from '../../src/index.js';

const Order = z.object({ id: z.string(), cents: z.number() });
type Order = z.infer<typeof Order>;
interface Invoice {
  orderId: string;
  total: number;
}
interface Refund {
  orderId: string;
  refunded: true;
}
const orders = topic('orders', { schema: Order });
const invoices = topic<Invoice>('invoices');
const rates = topic('rates', { reply: z.object({ rate: z.number() }) });
const invoice = (o: Order): Invoice => ({ orderId: o.id, total: o.cents });

/** The decorator takes topics of any type to publish on (the builder checks them against the handler). */
class Billing {
  @subscriber(orders, { publishTo: [invoices, topic<Refund>('refunds')], workers: 2 })
  bill(o: Order): Invoice {
    return invoice(o);
  }

  @subscriber(rates, { replies: true })
  rate(): { rate: number } {
    return { rate: 1 };
  }
}

/** Never called: what compiles and what does not. */
function typeChecks(app: App, router: Router): void {
  router.include(Billing);
  // The handler's payload comes from the topic's schema.
  subscriber(orders, (o) => expectTypeOf(o).toEqualTypeOf<Order>());
  subscriber(orders).handle((o) => expectTypeOf(o).toEqualTypeOf<Order>());
  // A publisher takes what the handler returns, or a wider type; a promise of it too; outcomes aside.
  router.include(subscriber(orders, invoice).publishTo(invoices));
  router.include(subscriber(orders, async (o) => invoice(o)).publishTo(invoices));
  router.include(
    subscriber(orders, (o) => (o.cents > 0 ? invoice(o) : HandlerOutcome.reject('free'))).publishTo(invoices),
  );
  router.include(subscriber(orders, (o) => ({ ...invoice(o), extra: 1 })).publishTo(invoices));
  router.include(subscriber(orders, invoice).publishTo(topic<unknown>('anything')));
  // @ts-expect-error -- a handler of invoices on a topic of refunds
  router.include(subscriber(orders, invoice).publishTo(topic<Refund>('refunds')));
  // @ts-expect-error -- a handler that returns a value nothing publishes
  router.include(subscriber(orders, invoice));
  // @ts-expect-error -- the same, built
  subscriber(orders, invoice).build();
  subscriber(orders, invoice).publishTo(invoices).build();
  // A handler that returns nothing may be built without a publisher, and may have one.
  subscriber(orders, () => {}).build();
  subscriber(orders, () => {})
    .publishTo(invoices)
    .build();

  // A typed producer takes the topic's type.
  expectTypeOf(app.publisher(invoices)).toEqualTypeOf<Publisher<Invoice>>();
  void app.publisher(invoices).publish({ orderId: 'o', total: 1 });
  // @ts-expect-error -- not an invoice
  void app.publisher(invoices).publish({ orderId: 'o' });

  // A request resolves with the topic's reply type, and refuses a topic nobody replies on.
  expectTypeOf(app.request(rates, 'x')).toEqualTypeOf<Promise<{ rate: number }>>();
  // @ts-expect-error -- invoices was made without a reply: nobody replies on it
  void app.request(invoices, { orderId: 'o', total: 1 });
  // @ts-expect-error -- not what the topic carries
  void app.request(topic<Order, Invoice>('quotes'), { id: 1 });
  // The value's type is the topic's, not widened from the value: a literal union takes its literal.
  const quotes = topic<{ currency: 'EUR' | 'USD' }, number>('quotes');
  void app.request(quotes, { currency: 'USD' });
  // @ts-expect-error -- not one of the topic's currencies
  void app.request(quotes, { currency: 'GBP' });
  // A subscriber that replies must return the reply type.
  router.include(subscriber(rates, () => ({ rate: 1 })).replies());
  // @ts-expect-error -- the wrong reply
  router.include(subscriber(rates, () => ({ rate: 'one' })).replies());
  // @ts-expect-error -- nobody may reply on a topic made without a reply type
  router.include(subscriber(invoices, () => 1).replies());
}

describe('publishing types', () => {
  it('compile as the checks above say', () => {
    expect(typeof typeChecks).toBe('function');
  });
});
