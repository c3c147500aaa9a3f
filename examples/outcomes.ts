/**
 * Outcomes: what a handler's answer does to a delivery.
 *
 * - `HandlerOutcome.ack()` or returning nothing: done, the offset becomes committable.
 * - `HandlerOutcome.retry()`: delivered again after the backoff; counts an attempt.
 * - `HandlerOutcome.reject(reason)`: never again; to the dead-letter topic with the reason.
 * - a thrown error: a retry; after the last attempt, dead-lettered.
 * - a message that does not decode: dead-lettered at once, the handler never sees it.
 *
 * Dead letters go to `<topic>.dlq` with the reason in header `x-sluice-error`.
 *
 * Run from the repository root:
 *   node --no-warnings --loader ts-node/esm examples/outcomes.ts
 */
import 'reflect-metadata';
import { App, ERROR_HEADER, HandlerOutcome, MemoryBroker, jsonLogger, subscriber, type Context } from '../src/index.js';
import { silentLogger } from '../src/testing.js';

interface Payment {
  id: string;
  action: 'ok' | 'flaky' | 'decline' | 'crash' | 'busy';
}

class Payments {
  /** One worker, so that the printout comes in order; three attempts with a fast backoff (10 ms, 20 ms). */
  @subscriber('payments', { workers: 1, retry: { attempts: 3, backoff: { initialMs: 10, maxMs: 50 } } })
  handle(p: Payment, ctx: Context) {
    const attempt = ctx.message.attempt;
    const say = (what: string): void => console.log(`  ${p.id} (${p.action}) attempt ${attempt}: ${what}`);
    switch (p.action) {
      case 'ok':
        say('ack');
        return HandlerOutcome.ack();
      case 'flaky': // fails twice, then succeeds
        if (attempt < 3) {
          say('retry');
          return HandlerOutcome.retry();
        }
        say('ack');
        return; // returning nothing is ack
      case 'busy': // always asks for a retry: exhausted after 3 attempts
        say('retry');
        return HandlerOutcome.retry({ delayMs: 5 });
      case 'decline':
        say('reject');
        return HandlerOutcome.reject('card declined');
      case 'crash':
        say('throw');
        throw new Error('payment provider unreachable');
    }
  }
}

// Logs are off to keep the printout readable; set SLUICE_LOG_LEVEL=info to see them (JSON lines on stderr).
const logger = process.env.SLUICE_LOG_LEVEL ? jsonLogger() : silentLogger;
const broker = new MemoryBroker();
const app = new App({ name: 'payments', logger }).withBroker(broker, (b) => b.include(Payments));
await app.start();

console.log('handled:');
for (const [id, action] of [
  ['p1', 'ok'],
  ['p2', 'flaky'],
  ['p3', 'busy'],
  ['p4', 'decline'],
  ['p5', 'crash'],
] as const) {
  await broker.publish('payments', { id, action });
}
await broker.publish('payments', '{"id": "p6", oops'); // not JSON: never reaches the handler
await app.idle();

console.log('dead letters in payments.dlq:');
for (const m of broker.messages('payments.dlq')) {
  const text = Buffer.from(m.value).toString('utf8');
  console.log(
    `  offset ${m.headers['x-sluice-original-offset']}, ${m.headers['x-sluice-attempts']} attempt(s): ${text}`,
  );
  console.log(`    ${ERROR_HEADER}: ${m.headers[ERROR_HEADER]}`);
}
console.log(
  `committed offset of group "payments" on payments: ${broker.committed('payments', 'payments').join(',')} (of ${broker.endOffsets('payments').join(',')})`,
);
await app.stop();
