/**
 * The console (docs/console.md): a page on the app's HTTP server that shows its subscribers and acts on them.
 *
 * - `http: { port: 8080, console: { token } }`: the page at http://127.0.0.1:8080/console and its JSON API
 *   under /console/api/, on loopback only (no `http.host`); its actions (pause, resume, cancel, replay) need
 *   the token, read here from SLUICE_CONSOLE_TOKEN. Without it the console shows, and refuses every action.
 * - `reindex`: a paced subscriber (a 3 s debounce per row) fed a row change every second, so that the
 *   console has windows gathering and runs to pause, cancel and resume.
 * - `orders`: an order a second; one in five is rejected the first time (a warehouse that said no), so its
 *   dead-letter topic fills and Replay has something to send again (the second time it is taken).
 *
 * Run from the repository root, then open the page and paste the token into its Token field:
 *   SLUICE_CONSOLE_TOKEN=change-me node --no-warnings --loader ts-node/esm examples/console.ts
 * PORT picks another port. It serves until Ctrl-C, then stops gracefully.
 */
import { App, HandlerOutcome, MemoryBroker, subscriber, type Context } from '../src/index.js';
import { memoryStore } from '../src/testing.js';

interface RowChange {
  row: string;
  column: string;
}
interface Order {
  n: number;
}

const token = process.env.SLUICE_CONSOLE_TOKEN;
const port = Number(process.env.PORT ?? 8080);
const broker = new MemoryBroker({ partitions: 2 });
const refusedOnce = new Set<number>();

const reindex = subscriber('row-changes', (latest: RowChange, ctx: Context) => {
  console.log(`reindex ${ctx.run!.key}: ${ctx.run!.size} changes, the latest to ${latest.column}`);
})
  .name('reindex')
  .pace({ debounce: '3 seconds' })
  .build();

const orders = subscriber('orders', (order: Order) => {
  if (order.n % 5 === 0 && !refusedOnce.has(order.n)) {
    refusedOnce.add(order.n);
    return HandlerOutcome.reject('the warehouse refused it');
  }
  return HandlerOutcome.ack();
})
  .name('orders')
  .build();

let ticker: NodeJS.Timeout | undefined;
const app = new App({
  name: 'console-example',
  store: memoryStore(),
  http: { port, console: token === undefined || token === '' ? {} : { token } },
})
  .withBroker(broker, (b) => b.include(reindex, orders))
  .afterStartup(() => {
    let n = 0;
    ticker = setInterval(() => {
      n++;
      const change = { row: `row-${n % 7}`, column: ['name', 'price', 'stock'][n % 3]! };
      void app.send(reindex, { key: change.row, event: change }).catch(() => {});
      void broker.publish('orders', { n }, { key: `order-${n}` }).catch(() => {});
    }, 1_000);
    console.log(`the console: http://127.0.0.1:${app.httpPort()}/console`);
    if (token === undefined || token === '')
      console.log('SLUICE_CONSOLE_TOKEN is not set: the console shows, and refuses every action');
  })
  .onShutdown(() => clearInterval(ticker));

await app.run();
