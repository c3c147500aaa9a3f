/**
 * An app as the `sluice` command runs it: the module exports it, and does not start it itself.
 *
 *   npx sluice run examples/app.ts            # serves until Ctrl-C, then stops gracefully
 *   npx sluice run examples/app.ts --reload   # restarts when a file in examples/ changes
 *   npx sluice asyncapi examples/app.ts       # its AsyncAPI document
 *   npx sluice docs serve examples/app.ts     # the document as a page on http://127.0.0.1:8080/
 *
 * It runs on the memory broker: once started, it bills an order a second that it publishes to itself.
 */
import 'reflect-metadata';
import { z } from 'zod';
import { App, MemoryBroker, subscriber, topic } from '../src/index.js';

const Order = z.object({ id: z.string(), cents: z.number().int() });
const orders = topic('orders', { schema: Order, key: (o) => o.id });
const invoices = topic('invoices', { schema: z.object({ orderId: z.string(), total: z.string() }) });

let ticker: NodeJS.Timeout | undefined;
const app = new App({ name: 'billing', version: '1.0.0', description: 'Bills orders and issues invoices.' });
export default app
  .withBroker(new MemoryBroker(), (b) =>
    b.include(
      subscriber(orders, (o) => ({ orderId: o.id, total: (o.cents / 100).toFixed(2) }))
        .publishTo(invoices)
        .workersByKey(4)
        .build(),
      subscriber(invoices, (i) => console.log(`invoice for ${i.orderId}: ${i.total}`)).build(),
    ),
  )
  .afterStartup(() => {
    // Once it runs, an order a second, as a shop would send them; the stop ends it.
    let n = 0;
    const shop = app.publisher(orders);
    ticker = setInterval(() => void shop.publish({ id: `o-${++n}`, cents: 100 * n + 99 }).catch(() => {}), 1_000);
    console.log('ready');
  })
  .onShutdown(() => clearInterval(ticker))
  .afterShutdown(() => console.log('stopped'));
