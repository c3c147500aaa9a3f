/**
 * Middlewares and lifecycle hooks: what a service adds around its handlers without touching them.
 *
 * - `app.use`: a timing and outcome log around every attempt (the seam metrics and tracing hang on);
 * - a router's `use`: an auth check that short-circuits (rejects without running the handler) and enriches
 *   `ctx.state` with the caller for the handler;
 * - a subscriber's own `.use`: maps one kind of error to a retry after a delay, the rest to a reject;
 * - `app.usePublish`: carries a trace header onto everything the handlers publish, dead letters included;
 * - `onStartup` / `afterStartup` / `onShutdown` / `afterShutdown`: a readiness flag, as a health check reads it.
 *
 * Run from the repository root:
 *   node --no-warnings --loader ts-node/esm examples/middlewares.ts
 */
import {
  App,
  ERROR_HEADER,
  HandlerOutcome,
  MemoryBroker,
  Router,
  jsonLogger,
  subscriber,
  type Context,
  type Middleware,
} from '../src/index.js';
import { silentLogger } from '../src/testing.js';

interface Order {
  id: string;
  cents: number;
}

class ProviderBusy extends Error {}

/** Every attempt of every subscriber: how long it took and what came of it. */
const outcomes: string[] = [];
const timing: Middleware = async (ctx, next) => {
  const t0 = performance.now();
  try {
    const outcome = await next();
    outcomes.push(`${ctx.subscriber} ${ctx.message.id} attempt ${ctx.attempt}: ${outcome.kind}`);
    return outcome;
  } finally {
    ctx.log.debug('attempt', { attempt: ctx.attempt, ms: performance.now() - t0 });
  }
};

/** Only callers with a token get in; the handler finds who called in `ctx.state.caller`. */
const auth: Middleware = (ctx, next) => {
  const token = ctx.message.headers.authorization;
  if (token === undefined) return HandlerOutcome.reject('no authorization header');
  ctx.state.caller = token.replace(/^Bearer /, '');
  return next();
};

async function charge(order: Order, ctx: Context): Promise<void> {
  if (order.id === 'o2' && ctx.message.attempt < 3) throw new ProviderBusy('provider busy');
  if (order.cents < 0) throw new Error('negative amount');
  await ctx.publish('receipts', { order: order.id, by: ctx.state.caller });
}

const billing = new Router({ prefix: 'billing.' }).use(auth);
billing.include(
  subscriber('orders', charge)
    .retry({ attempts: 5 })
    .use(async (_ctx, next) => {
      try {
        return await next();
      } catch (error) {
        if (error instanceof ProviderBusy) return HandlerOutcome.retry({ delayMs: 10 });
        return HandlerOutcome.reject(`not chargeable: ${(error as Error).message}`);
      }
    }),
);

let ready = false;
const logger = process.env.SLUICE_LOG_LEVEL ? jsonLogger() : silentLogger;
const broker = new MemoryBroker();
const app = new App({ name: 'billing', logger })
  .use(timing)
  .usePublish((message, next, info) => {
    const trace = info.context?.message.headers.traceparent ?? 'none';
    return next({ ...message, headers: { ...message.headers, traceparent: trace } });
  })
  .onStartup(() => console.log('onStartup: nothing connected yet'))
  .afterStartup(() => {
    ready = true;
  })
  .onShutdown(() => {
    ready = false; // a health check says "not ready" before the app stops reading
  })
  .afterShutdown(() => console.log('afterShutdown: everything closed'))
  .withBroker(broker, (b) => b.include(billing));

await app.start();
console.log(`ready after start: ${ready ? 'yes' : 'NO'}`);
const bearer = { authorization: 'Bearer alice', traceparent: '00-abc-01' };
await broker.publish('billing.orders', { id: 'o1', cents: 100 }, { headers: bearer });
await broker.publish('billing.orders', { id: 'o2', cents: 200 }, { headers: bearer }); // busy twice, then ok
await broker.publish('billing.orders', { id: 'o3', cents: -5 }, { headers: bearer }); // mapped to a reject
await broker.publish('billing.orders', { id: 'o4', cents: 100 }); // no token: never reaches the handler
await app.idle();
await app.stop();

console.log('attempts, as the timing middleware saw them:');
for (const line of outcomes) console.log(`  ${line}`);
const receipts = broker.messages('receipts');
console.log('receipts:');
for (const m of receipts) console.log(`  ${m.value.toString()} traceparent=${m.headers.traceparent}`);
console.log('dead letters:');
for (const m of broker.messages('billing.orders.dlq'))
  console.log(`  ${m.value.toString()}: ${m.headers[ERROR_HEADER]} traceparent=${m.headers.traceparent}`);

const check = (what: string, ok: boolean): void => console.log(`${what}: ${ok ? 'yes' : 'NO'}`);
check(
  'receipts carry the trace and the caller',
  receipts.length === 2 &&
    receipts.every((m) => m.headers.traceparent === '00-abc-01' && m.value.toString().includes('alice')),
);
check('o2 retried until it passed', outcomes.filter((l) => l.includes('/1 attempt')).length === 3);
check('dead letters carry the trace too', broker.messages('billing.orders.dlq').length === 2);
check('not ready once stopped', !ready);
