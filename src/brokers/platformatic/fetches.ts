import { SystemClock } from '../../core/clock.js';
import { Waiters } from '../../core/waiters.js';
import { pk } from './client.js';

const SYSTEM_CLOCK = new SystemClock();

/** Fetch requests each client consumer has under way, learnt from the client's `consumer:fetches` tracing channel. */
const underWay = new WeakMap<object, number>();
/** Woken whenever a fetch's answer was handled (its records pushed into its stream). */
const landed = new Waiters();
let listening = false;

/**
 * Starts counting the fetches of every client consumer, before the first one whose fetches are waited for
 * ({@link fetchesLanded}) fetches anything. A fetch's callback has pushed its records and moved the stream's
 * positions by the time the channel's `asyncEnd` is published.
 */
export function countFetches(): void {
  if (listening) return;
  listening = true;
  const of = (context: unknown): object | undefined => (context as { client?: object }).client;
  /** Fetches whose callback ran: their `asyncEnd` was published. */
  const answered = new WeakSet<object>();
  const settle = (context: unknown): void => {
    const client = of(context);
    if (client === undefined) return;
    underWay.set(client, Math.max(0, (underWay.get(client) ?? 0) - 1));
    landed.wake();
  };
  pk.consumerFetchesChannel.start.subscribe((context) => {
    const client = of(context);
    if (client !== undefined) underWay.set(client, (underWay.get(client) ?? 0) + 1);
  });
  pk.consumerFetchesChannel.asyncEnd.subscribe((context) => {
    answered.add(context as object);
    settle(context);
  });
  // A fetch that throws before it sends anything publishes `error` then `end`, and its callback never runs: at
  // `end` it holds its error and no answer. (An answer's error comes after `end`, or with its `asyncEnd` before.)
  pk.consumerFetchesChannel.end.subscribe((context) => {
    if ((context as { error?: unknown }).error !== undefined && !answered.has(context as object)) settle(context);
  });
}

/**
 * Resolves once no fetch of `consumer` is under way, or after `timeoutMs` (a fetch whose answer never comes).
 * A fetch sent before a classic rebalance answers from the positions it was sent with: it would move the
 * stream's positions past where the reading resumes after the rejoin were it to land after they were set.
 */
export async function fetchesLanded(consumer: object, timeoutMs: number): Promise<void> {
  if ((underWay.get(consumer) ?? 0) === 0) return;
  let late = false;
  const timer = SYSTEM_CLOCK.setTimer(timeoutMs, () => {
    late = true;
    landed.wake();
  });
  try {
    while (!late && (underWay.get(consumer) ?? 0) > 0) await landed.next();
  } finally {
    timer.cancel();
  }
}
