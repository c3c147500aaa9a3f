/**
 * The app the console's tests look at: on the memory broker with a memory store and a ManualClock, a paced
 * subscriber `reindex` (debounce 10 ms), a subscriber `orders` that rejects even numbers while `rejecting.on`
 * (they land in `orders.dlq`), and a subscriber whose name is markup.
 */
import {
  App,
  HandlerOutcome,
  ManualClock,
  MemoryBroker,
  memoryStore,
  silentLogger,
  subscriber,
  type HttpOptions,
  type Logger,
} from '../../src/index.js';

/** A subscriber name a page must show as text. */
export const HOSTILE = '<img src=x onerror="document.title=\'owned\'">';

/** The app, its clock and broker, and what its handlers saw. */
export interface ConsoleFixture {
  readonly app: App;
  readonly clock: ManualClock;
  readonly broker: MemoryBroker;
  /** Each run of `reindex`: its key and the last event's `n`. */
  readonly ran: { key: string; n: number }[];
  /** Each order `orders` took (not rejected), by `n`. */
  readonly handled: number[];
  /** While on, `orders` rejects even numbers. */
  readonly rejecting: { on: boolean };
}

/** A new (not started) app with `http`. */
export function consoleApp(http: HttpOptions, logger: Logger = silentLogger): ConsoleFixture {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const broker = new MemoryBroker();
  const ran: { key: string; n: number }[] = [];
  const handled: number[] = [];
  const rejecting = { on: true };
  const app = new App({ name: 'shop', logger, clock, store: memoryStore(), shutdownTimeoutMs: 1_000, http }).withBroker(
    broker,
    (b) =>
      b.include(
        subscriber('rows', (e: { n: number }, ctx) => void ran.push({ key: ctx.run!.key, n: e.n }))
          .name('reindex')
          .pace({ debounce: 10 })
          .build(),
        subscriber('orders', (o: { n: number }) => {
          if (rejecting.on && o.n % 2 === 0) return HandlerOutcome.reject(`even: ${o.n}`);
          handled.push(o.n);
          return HandlerOutcome.ack();
        })
          .name('orders')
          .build(),
        subscriber('misc', () => {})
          .name(HOSTILE)
          .build(),
      ),
  );
  return { app, clock, broker, ran, handled, rejecting };
}
