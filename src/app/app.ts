import { SystemClock } from '../core/clock.js';
import { SluiceError, show } from '../core/errors.js';
import { jsonLogger, safeLogger } from '../core/logger.js';
import { faultsOf, type Broker, type Clock, type Logger } from '../core/ports.js';
import { Waiters } from '../core/waiters.js';
import type { CompiledSubscriber } from '../declare/compile.js';
import type { SharedOptions } from '../declare/options.js';
import type { Router } from '../declare/router.js';
import type { SubscriberSpec } from '../declare/spec.js';
import { parseDefaults } from '../declare/parse.js';
import { fileStore } from '../store/file-store.js';
import { checkAppOptions, defaultStoreDir, type AppOptions } from './app-options.js';
import { callingHandlerHost } from '../pipeline/executor.js';
import { Hooks } from './hooks.js';
import { AppControl, type ControlSource } from './app-control.js';
import { asyncApiOf, type AsyncApiDocument, type AsyncApiSource } from './asyncapi.js';
import { waitIdle } from './idle.js';
import { held, Lifecycle } from './lifecycle.js';
import { Mounts } from './mounts.js';
import { StartParts } from './start-parts.js';
import { sendRefusal, type AsJson, type PacedEventOf, type PacedStart, type SendTarget } from './send.js';
import { serveUntilStopped } from './signals.js';
import type { Subscription } from '../pipeline/subscription.js';
import { Topic } from '../declare/topic.js';
import {
  Publisher,
  publisherHostOf,
  request,
  type BrokerChoice,
  type PublisherHost,
  type Requestable,
  type RequestOptions,
} from './publisher.js';
import type { RequestCounts } from './requests.js';
import { Telemetry } from '../telemetry/telemetry.js';
import { consoleRoutes } from './console/console-routes.js';

export type { AppOptions };
import type { Receipt } from '../pace/state.js';
export type { Receipt };

/**
 * The composition root: brokers with their subscribers, a lifecycle (start, stop, run) and `idle()` for
 * tests. Settings are checked in the constructor and compiled when `withBroker` is called, so a bad one
 * throws there.
 *
 * The lifecycle gives each call one outcome in each state (an App runs once; a failed start may be retried):
 *
 * | state    | start()                                            | stop()                                          |
 * |----------|----------------------------------------------------|-------------------------------------------------|
 * | new      | starting; resolves once running                    | stopped at once (nothing had started)           |
 * | starting | rejects APP_STATE                                  | the start unwinds after the step under way and closes what it opened; start() rejects APP_STATE; stop() resolves once all is closed: stopped |
 * | running  | rejects APP_STATE                                  | stopping, then stopped                          |
 * | stopping | rejects APP_STATE                                  | the same promise as the first stop()            |
 * | stopped  | rejects APP_STATE (make a new App)                 | resolves                                        |
 *
 * A start that fails closes whatever it had opened (consumers, store, brokers) and leaves the App `new`:
 * start() may be called again. A part that fails to close is logged, the rest are closed, the app ends
 * stopped and stop() rejects with the failure. While `start`, `stop`, `run` or `idle` is awaited, the
 * process stays alive. Lifecycle hooks run inside these steps: `onStartup` before a start opens anything,
 * `afterStartup` once it opened everything, `onShutdown` when a running app's stop begins, `afterShutdown`
 * once it closed everything (see {@link App.onStartup} and the others).
 *
 * @example
 * ```ts
 * const app = new App({ name: 'billing', shutdownTimeoutMs: 10_000 })
 *   .withBroker(new MemoryBroker(), (b) => b.include(subscriber('orders', bill).workers(4).build()));
 * await app.start();
 * // ...
 * await app.stop();
 * ```
 *
 * @category App
 */
export class App extends AppControl {
  /** The app's name (`options.name`): the default consumer group, in every log line, and the default store's folder. */
  readonly name: string;
  /** `options.version`, written in the `started` log line. @defaultValue `'0.0.0'` */
  readonly version: string;
  /** The clock every timer of the app runs on: retry backoff, handler timeouts, the shutdown deadline, pace windows. */
  readonly clock: Clock;
  /** The app's logger, with `app: <name>` bound; it never throws into the app, whatever the logger given does. */
  readonly log: Logger;
  private readonly mounts: Mounts;
  private readonly lifecycle: Lifecycle;
  protected readonly hooks: Hooks;
  /** Woken whenever work was taken or finished, an append became durable, or the app stopped: `idle()` looks again. */
  private readonly progress = new Waiters();
  /** The topics of `app.publisher` and `app.request`, for {@link App.asyncapi}. */
  private readonly published = new Map<string, AsyncApiSource['published'][number]>();
  /** Metrics, health and the HTTP server. */
  private readonly telemetry: Telemetry;

  /**
   * Checks the settings; nothing is connected or opened before {@link App.start}.
   *
   * @param options - the app's name and settings; see {@link AppOptions}.
   * @throws {@link SluiceError} `CONFIG_INVALID` for an unknown setting or a bad value (a `clock`, `store`
   *   or `logger` that is not one), `WORKERS_INVALID` (or `CONFIG_INVALID`) for bad `defaults`.
   */
  constructor(private readonly options: AppOptions) {
    super();
    checkAppOptions(options);
    this.name = options.name;
    this.version = options.version ?? '0.0.0';
    this.clock = options.clock ?? new SystemClock();
    // Whatever a logger does, logging never throws into the app: it logs from where a throw would stop a worker.
    this.log = safeLogger(options.logger ?? jsonLogger()).child({ app: this.name });
    const defaults: Readonly<SharedOptions> | undefined =
      options.defaults === undefined ? undefined : parseDefaults(options.defaults, `App "${options.name}" defaults`);
    this.mounts = new Mounts({ name: this.name, defaults, hasStore: options.store !== undefined });
    this.hooks = new Hooks(this.name);
    this.telemetry = new Telemetry(options, {
      name: this.name,
      clock: this.clock,
      log: this.log,
      state: () => this.lifecycle.state,
      subscriptions: () => this.subscriptions(),
      pacer: () => this.lifecycle.parts?.pacer,
      routes: consoleRoutes(this, options.http),
    });
    this.lifecycle = new Lifecycle({
      hooks: this.hooks,
      name: this.name,
      log: this.log,
      version: this.version,
      mounts: () => this.mounts.all,
      makeStartParts: () => this.makeStartParts(),
      onProgress: () => this.progress.wake(),
      telemetry: this.telemetry,
    });
  }

  /**
   * Mounts subscribers on a broker: `configure` gets a router (no prefix) to `include` into. Every setting
   * is checked here; a bad one throws `SluiceError` naming the subscriber, the field and the value. Call it
   * once per broker (or again for the same one), before {@link App.start}.
   *
   * @param broker - where the subscribers read and their dead letters go: a {@link MemoryBroker}, a
   *   `KafkaBroker` (from `sluice/kafka`), or any {@link Broker}.
   * @param configure - called at once with a router to `include` specs, builders, decorated classes or
   *   instances, and routers into.
   * @returns the app, to chain.
   * @throws {@link SluiceError} `APP_STATE` after `start()`; `CONFIG_INVALID` for two subscribers with one
   *   name, two subscribers of one topic in one group, bad merged settings or pace, or (for an app with a
   *   paced subscriber and no `store`) a name that is not a plain folder name; `WORKERS_INVALID`,
   *   `PACE_UNKNOWN_PART` and `PACE_BAD_DURATION` as their settings say.
   */
  withBroker(broker: Broker, configure: (b: Router) => void): this {
    this.assertNew('withBroker');
    this.mounts.add(broker, configure);
    return this;
  }

  /** @internal What `inspect` and the actions read. */
  protected get control(): ControlSource {
    return {
      state: () => this.lifecycle.state,
      subscriptions: () => this.subscriptions(),
      health: () => this.telemetry.health(true),
      pacer: () => this.lifecycle.parts?.pacer,
      brokerOf: (subscriber) => this.mounts.all.find((m) => m.subscribers.some((s) => s.name === subscriber))?.broker,
    };
  }

  /** @internal The lifecycle's state, for the settings' checks. */
  protected get state(): string {
    return this.lifecycle.state;
  }

  /**
   * Every mounted subscriber with every setting resolved (its own over its routers' over the app's
   * `defaults` over {@link DEFAULTS}), in the order they were mounted. For checking what a configuration
   * came to.
   */
  subscribers(): readonly CompiledSubscriber[] {
    return this.mounts.subscribers();
  }

  /**
   * The port the app's HTTP server (`options.http`) listens on, from early in `start()` until `stop()` ends:
   * the one given, or the one the system picked for port 0. Undefined otherwise.
   */
  httpPort(): number | undefined {
    return this.telemetry.port;
  }

  /**
   * Connects the brokers, opens the store (for paced subscribers) and starts every subscription;
   * resolves once the app is running. A start that fails (or that `stop()` interrupts) closes what it had
   * opened; see the lifecycle table above.
   *
   * @throws {@link SluiceError} `APP_STATE` (as a rejection) unless the app is new, or when `stop()`
   *   interrupted the start; `STORE_CORRUPT` when a shard of the store cannot be recovered;
   *   `TOPIC_MISSING` from `KafkaBroker` for a missing topic; whatever a broker's `connect` rejects with.
   */
  start(): Promise<void> {
    return this.lifecycle.start();
  }

  /**
   * Stops gracefully: stop reading; let in-flight deliveries finish; commit what finished; close the
   * pace store and the brokers — all within `shutdownTimeoutMs` of the call (at the deadline, handlers
   * still running have `ctx.signal` aborted and what was not committed is delivered again). Safe to call more than
   * once, and at any point
   * of the lifecycle (see the table above). Called by one of the app's handlers before that handler's first
   * `await`, it resolves once the stop has begun. A handler that calls it later must not await it: the stop
   * waits for that handler, until `shutdownTimeoutMs`; it calls `void app.stop()` and returns.
   */
  stop(): Promise<void> {
    const stopped = this.lifecycle.stop();
    // From a handler of this app (before its first await): the stop waits for that handler, so the handler
    // must not wait for the stop. It is answered once the stop has begun (nothing more is read), returns,
    // its delivery is committed, and the stop goes on.
    const host = callingHandlerHost();
    if (host !== undefined && this.subscriptions().includes(host as Subscription)) return Promise.resolve();
    return stopped;
  }

  /**
   * Starts, serves until SIGINT or SIGTERM (or a call of `stop()`), then stops gracefully. The signals are
   * listened for from the first moment: one that arrives while the app is starting stops it there (the
   * start unwinds), and run() resolves once it is stopped.
   */
  run(): Promise<void> {
    const { lifecycle, log } = this;
    return serveUntilStopped({
      start: () => this.start(),
      stop: () => this.stop(),
      stopCalled: lifecycle.stopCalled,
      log,
    });
  }

  /**
   * Resolves once every delivery published so far is settled: nothing in flight (retries waiting on the
   * clock included) and nothing left to read. For tests. Messages that handlers publish onward count too
   * when a subscriber of this app reads them. For paced subscribers it waits for the records under way and
   * the runs in flight, not for windows still open nor starts waiting for their rate: with a
   * {@link ManualClock}, advance it past them first (and past a retry's backoff), or `idle()` waits for ever.
   */
  idle(): Promise<void> {
    return held(() =>
      waitIdle({
        quiet: () => this.lifecycle.state === 'stopped' || (this.lifecycle.parts?.idle() ?? true),
        lags: async () => (await this.lifecycle.parts?.lags()) ?? [],
        progress: this.progress,
      }),
    );
  }

  /**
   * A start of a paced subscriber, for callers without a broker: resolves once the event is durable, with
   * the run it joined (from then on it is part of exactly one run, across any crash). An `eventId` the key
   * has seen within `dedup` gets the first receipt again, with `duplicate: true`, and adds nothing.
   *
   * The event is typed by the subscriber: given its {@link SubscriberSpec}, the event must be what its
   * handler takes (or one element, for a `batch` handler that takes an array); given its name, any value
   * that JSON keeps. Where TypeScript can tell that JSON would not keep it (a function, a `bigint`, an
   * object holding one: see {@link AsJson}), the call does not compile.
   *
   * @typeParam T - what the subscriber's handler takes (from the spec).
   * @typeParam E - the event's own type (from `start.event`).
   * @param subscriber - the paced subscriber: its spec (as mounted in this app), or its name.
   * @param start - `key`: the key whose coordinator takes the start; `event`: the payload, a JSON value;
   *   `eventId`: optional, a non-empty string that makes a retried send join once.
   * @returns the {@link Receipt}: `{ kind: 'run', runId, duplicate }`, the run (`<key>@<uuid>`) the event
   *   joined, or `{ kind: 'dropped', dropped: true }`.
   * @throws {@link SluiceError} (as a rejection) `UNKNOWN_SUBSCRIBER` for a name (or a spec's name) that no
   *   subscriber of the app has;
   *   `CONFIG_INVALID` for a subscriber without pace; `APP_STATE` when the app is not running;
   *   `SEND_INVALID` for a key that is not a string or is over {@link MAX_KEY_BYTES}, an empty `eventId`,
   *   an event that is not JSON or whose record is over 64 MiB, or an `order` that throws or is not a
   *   finite number.
   *
   * @example
   * ```ts
   * const receipt = await app.send(reindex, { key: 'row-7', event: { rowId: 'row-7' }, eventId: 'chg-91' });
   * // { kind: 'run', runId: 'row-7@6f1c…', duplicate: false }: durable once this resolves
   * await app.send('reindex', { key: 'row-8', event: { rowId: 'row-8' } }); // by name: any JSON event
   * ```
   */
  async send<T = unknown, E = unknown>(
    subscriber: SubscriberSpec<T> | string,
    start: PacedStart<E & AsJson<E> & PacedEventOf<T>>,
  ): Promise<Receipt> {
    const refused = sendRefusal(this.sendTarget(), subscriber, start);
    if (refused) throw refused;
    const { key, event, eventId } = start;
    const name = typeof subscriber === 'string' ? subscriber : subscriber.name;
    return this.lifecycle.parts!.send(name, { key, event, eventId });
  }

  /**
   * A typed producer of `topic`, outside handlers: `app.publisher(invoices).publish(invoice, { key })` takes
   * the topic's type, goes through the publish middlewares and tracing, and resolves once the broker has the
   * message. It publishes while the app runs (else `APP_STATE`).
   *
   * @param options - `broker`: the broker to publish on, where the app has more than one.
   */
  publisher<T>(topic: Topic<T, unknown>, options: BrokerChoice = {}): Publisher<T> {
    if (!((topic as unknown) instanceof Topic))
      throw new SluiceError('CONFIG_INVALID', `App "${this.name}": publisher() takes a topic(), got ${show(topic)}`);
    this.published.set(topic.name, { topic: topic as Topic<unknown, unknown>, requests: false });
    return new Publisher(topic, this.publisherHost(), options);
  }

  /**
   * Publishes `value` on `topic` as a request and resolves with the reply of the subscriber marked
   * `.replies()` that handles it (its return value, decoded by the topic's `reply`). On any broker: the reply
   * comes back on the app's `replyTopic`, read by each instance in a group of its own from its first request.
   * A topic made without a reply type does not compile here: nobody replies on it.
   *
   * @throws {@link SluiceError} (as a rejection) `REQUEST_TIMEOUT` when no reply came within `timeoutMs` (a
   *   later one is dropped and counted in {@link App.requestCounts}); `APP_STATE` unless the app runs (or when
   *   it stops first); `CONFIG_INVALID` for a bad `timeoutMs`; what the publish rejects with.
   *
   * @example
   * ```ts
   * const rates = topic('rates', { schema: RateQuery, reply: Rate });
   * const rate = await app.request(rates, { from: 'EUR', to: 'USD' }, { timeoutMs: 2_000 }); // rate: Rate
   * ```
   */
  request<Q, R>(topic: Topic<Q, R> & Requestable<R>, value: NoInfer<Q>, options: RequestOptions = {}): Promise<R> {
    this.published.set(topic.name, { topic: topic as Topic<unknown, unknown>, requests: true });
    return request(this.publisherHost(), topic, value, options);
  }

  /** The brokers the app is mounted on, in the order of their first `withBroker` (`sluice publish` uses them). */
  brokers(): readonly Broker[] {
    return [...new Set(this.mounts.all.map((m) => m.broker))];
  }

  /**
   * The app's AsyncAPI 3.0 document: a channel per topic it reads, publishes, dead-letters or replies on,
   * its operations, payload schemas from its topics' validators, and `x-sluice-*` extensions for what AsyncAPI
   * cannot say (docs/asyncapi.md). Topics used by `app.publisher` and `app.request` so far are included.
   */
  asyncapi(): AsyncApiDocument {
    const { options, version, mounts, published } = this;
    return asyncApiOf({ ...options, version, mounts: mounts.all, published: [...published.values()] });
  }

  /**
   * How this app's requests have fared since the last `start()`: sent, replied, timed out, replies come late.
   * After `stop()`, the stopped run's counts, until the next start.
   */
  requestCounts(): RequestCounts {
    const parts = this.lifecycle.parts ?? this.lifecycle.closed;
    return parts?.requestCounts() ?? { sent: 0, replied: 0, timedOut: 0, late: 0 };
  }

  private publisherHost(): PublisherHost {
    return publisherHostOf(this.name, this.lifecycle, () => this.mounts.all.map((m) => m.broker));
  }

  private sendTarget(): SendTarget {
    return {
      name: this.name,
      state: this.lifecycle.state,
      has: (name: string) => this.mounts.has(name),
      paced: (name: string) => this.mounts.paces.has(name),
    };
  }

  private subscriptions(): readonly Subscription[] {
    return this.lifecycle.parts?.subscriptions ?? [];
  }

  private makeStartParts(): StartParts {
    const { options } = this;
    return new StartParts({
      name: this.name,
      clock: this.clock,
      log: this.log,
      shutdownTimeoutMs: options.shutdownTimeoutMs ?? 30_000,
      maxUncommitted: options.maxUncommitted ?? 10_000,
      sendTimeoutMs: options.sendTimeoutMs ?? 30_000,
      paces: this.mounts.paces,
      store: () => options.store ?? fileStore({ dir: defaultStoreDir(this.name) }),
      randomUUID: options.randomUUID,
      faults: faultsOf(options),
      onProgress: () => this.progress.wake(),
      middlewares: [...this.middlewares],
      publishMiddlewares: [...this.publishMiddlewares],
      telemetry: this.telemetry,
      replyTopic: options.replyTopic ?? `${this.name}.replies`,
    });
  }
}
