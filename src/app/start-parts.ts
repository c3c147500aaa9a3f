import { deadlineIn, within } from '../core/deadline.js';
import type { Middleware, PublishMiddleware } from '../core/middleware.js';
import type { Broker, Clock, Faults, Logger, Store } from '../core/ports.js';
import type { CompiledPace } from '../pace/config.js';
import type { Mount } from './mounts.js';
import type { Receipt } from '../pace/rules.js';
import type { Appended } from '../pace-stage/pace-event.js';
import { faultyPaceParts } from '../pace-stage/pace-faults.js';
import { Pacer } from '../pace-stage/pacer.js';
import { composePublish, type PublishFrom } from '../pipeline/middlewares.js';
import { Subscription, type SubscriptionSettings } from '../pipeline/subscription.js';
import { randomUUID as systemUUID } from 'node:crypto';
import { Requests } from './requests.js';
import type { Telemetry } from '../telemetry/telemetry.js';

/** What the parts of a start are made with: the app's settings. */
export interface StartPartsSettings {
  /** The app's name. */
  readonly name: string;
  readonly clock: Clock;
  readonly log: Logger;
  readonly shutdownTimeoutMs: number;
  readonly maxUncommitted: number;
  /** How long an `app.send` routed to another instance waits for its answer. */
  readonly sendTimeoutMs: number;
  /** The paced subscribers' pace, by name: none, no pace stage and no store. */
  readonly paces: ReadonlyMap<string, CompiledPace>;
  /** The store of the pace stage, asked for only when there is one. */
  readonly store: () => Store;
  readonly randomUUID: (() => string) | undefined;
  readonly faults: Faults;
  /** Called whenever work was taken or finished, or an append became durable: `idle()` looks again. */
  readonly onProgress: () => void;
  /** The app's middlewares and publish middlewares, for every subscription. */
  readonly middlewares: readonly Middleware[];
  readonly publishMiddlewares: readonly PublishMiddleware[];
  /** The app's metrics, tracing and HTTP server (opened before the parts, closed after them, by the lifecycle). */
  readonly telemetry: Telemetry;
  /** The topic the replies to this app's requests are published on. */
  readonly replyTopic: string;
}

/**
 * What one start opens, and closes again as one: the brokers it connected, the pace stage (with its
 * store) and a subscription per subscriber.
 */
export class StartParts {
  /** The pace stage, when the app has paced subscribers. */
  readonly pacer: Pacer | undefined;
  /** One per mounted subscriber, once the start has made them. */
  readonly subscriptions: Subscription[] = [];
  /** Brokers whose `connect` resolved: the ones to close. */
  private readonly connected: Broker[] = [];
  /** The pace stage's store, when there is one. */
  private readonly store: Store | undefined;
  /** The app's own publishes (`app.publisher`, `app.request`) on each broker, made at the first. */
  private readonly publishes = new Map<Broker, PublishFrom>();
  /** The requests of the app on each broker, made at the first. */
  private readonly requests = new Map<Broker, Requests>();
  /** This start's instance ID: what its requests' replies are keyed with. */
  private readonly instance: string;

  constructor(private readonly settings: StartPartsSettings) {
    const { paces, clock, log, onProgress, randomUUID, faults } = settings;
    this.store = paces.size > 0 ? settings.store() : undefined;
    const parts = faultyPaceParts(faults); // none unless the simulator injected faults
    this.pacer = this.store ? new Pacer(this.store, paces, clock, log, onProgress, randomUUID, parts) : undefined;
    this.instance = (randomUUID ?? systemUUID)();
  }

  /**
   * A publish of the app itself on `broker` (`app.publisher`, `app.request`): through tracing's publish
   * middleware and the app's, as a subscriber's `ctx.publish` is, told `kind: 'publisher'`.
   */
  publishOn(broker: Broker): PublishFrom {
    let publish = this.publishes.get(broker);
    if (publish === undefined) {
      const { tracing } = this.settings.telemetry;
      const own = this.settings.publishMiddlewares;
      publish = composePublish(tracing ? [tracing.publish, ...own] : own, (t, v, o) => broker.publish(t, v, o), {
        kind: 'publisher',
        subscriber: this.settings.name,
      });
      this.publishes.set(broker, publish);
    }
    return publish;
  }

  /** The requests of the app on `broker`: their replies are read at the first. */
  requestsOn(broker: Broker): Requests {
    let requests = this.requests.get(broker);
    if (requests === undefined) {
      const publish = this.publishOn(broker);
      const { name, clock, shutdownTimeoutMs, replyTopic, randomUUID } = this.settings;
      requests = new Requests({
        broker,
        replyTopic,
        name,
        instance: this.instance,
        clock,
        uuid: randomUUID ?? systemUUID,
        shutdownTimeoutMs,
        publish: (topic, value, options) => publish(undefined, topic, value, options),
      });
      this.requests.set(broker, requests);
    }
    return requests;
  }

  /** How the requests of this start have fared, over every broker. */
  requestCounts(): { sent: number; replied: number; timedOut: number; late: number } {
    const sum = { sent: 0, replied: 0, timedOut: 0, late: 0 };
    for (const { counts } of this.requests.values())
      for (const k of Object.keys(sum) as (keyof typeof sum)[]) sum[k] += counts[k];
    return sum;
  }

  /**
   * Connects the brokers, makes the subscriptions, opens the pace stage and starts every subscription.
   * `checkpoint` is called between the steps: it throws to interrupt the opening. What was opened is left
   * for {@link StartParts.close}, whether the opening finished or not.
   */
  async open(mounts: readonly Mount[], checkpoint: () => void): Promise<void> {
    const { clock, log, shutdownTimeoutMs, maxUncommitted, onProgress, sendTimeoutMs, telemetry } = this.settings;
    const storeObserver = telemetry.storeObserver;
    if (storeObserver) this.store?.observe?.(storeObserver);
    const settings: SubscriptionSettings = {
      middlewares: this.settings.middlewares,
      publishMiddlewares: this.settings.publishMiddlewares,
      observe: telemetry.observe,
      tracing: telemetry.tracing,
      sendTimeoutMs,
      clock,
      logger: log,
      revokeTimeoutMs: shutdownTimeoutMs,
      maxUncommitted,
      onProgress,
      pacer: this.pacer,
    };
    for (const { broker, subscribers } of mounts) {
      if (!this.connected.includes(broker)) {
        await broker.connect({ logger: log, clock });
        this.connected.push(broker);
        checkpoint();
      }
      for (const sub of subscribers) this.subscriptions.push(new Subscription(sub, broker, settings));
    }
    // Subscriptions are attached first: recovered runs that did not finish go to their workers.
    await this.pacer?.open({ app: this.settings.name, subscribers: [...this.settings.paces.keys()] });
    checkpoint();
    // Every join settles before anything is closed: a consumer that joins after its subscription stopped would
    // never leave.
    const joins = await Promise.allSettled(this.subscriptions.map((s) => s.start()));
    const failed = joins.find((j) => j.status === 'rejected');
    if (failed) throw failed.reason;
    checkpoint();
  }

  /**
   * A start of a paced subscriber (`app.send`): appended here, or routed to the instance that owns the key's
   * partition where the subscriber's store routes sends (see `Store.routes`).
   */
  send(subscriber: string, appended: Appended): Promise<Receipt> {
    const routing = this.subscriptions.find((s) => s.sub.name === subscriber)?.routing;
    if (routing) return routing.send(appended); // which links a run appended here, or routes the trace context
    return this.pacer!.append(subscriber, appended, this.settings.telemetry.tracing?.sending());
  }

  /** Whether nothing is under way: no record of the pace stage, no delivery or run in a subscription. */
  idle(): boolean {
    return (this.pacer?.idle() ?? true) && this.subscriptions.every((s) => s.idle());
  }

  /** How many messages are left to read, per subscription. */
  lags(): Promise<number[]> {
    return Promise.all(this.subscriptions.map((s) => s.lag()));
  }

  /**
   * Closes the subscriptions, the pace store and the brokers, all within one deadline `shutdownTimeoutMs`
   * away. Every part is closed whatever another one does: what failed is logged and returned.
   */
  async close(): Promise<unknown[]> {
    const { clock, shutdownTimeoutMs } = this.settings;
    // The caller awaits this deadline: it keeps the process alive.
    const stop = deadlineIn(clock, shutdownTimeoutMs, { keepAlive: true });
    const deadline = stop.passed;
    const failures: unknown[] = [];
    const stops = [
      ...this.subscriptions.map((s) => s.stop(deadline)),
      ...[...this.requests.values()].map((r) => r.close(deadline)),
    ];
    await this.settle('a subscription', stops, failures);
    await this.settle('the pace store', this.pacer ? [this.pacer.close(deadline)] : [], failures);
    await this.settle(
      'a broker',
      this.connected.map((b) => this.closeBroker(b, deadline)),
      failures,
    );
    stop.cancel();
    return failures;
  }

  /** Waits for every step; logs each that failed, and adds its error to `failures`. */
  private async settle(what: string, steps: Promise<unknown>[], failures: unknown[]): Promise<void> {
    for (const r of await Promise.allSettled(steps)) {
      if (r.status === 'fulfilled') continue;
      failures.push(r.reason);
      this.settings.log.error(`closing: ${what} failed`, { error: r.reason });
    }
  }

  /**
   * Closes a broker's own clients (a producer, an admin) within what is left of the deadline; one that
   * cannot reach its broker goes on closing in the background.
   */
  private async closeBroker(broker: Broker, deadline: Promise<void>): Promise<void> {
    const closed = await within(broker.close(), deadline);
    if (!closed)
      this.settings.log.warn(
        'closing: a broker did not close within the shutdown timeout; it goes on in the background',
        { timeoutMs: this.settings.shutdownTimeoutMs },
      );
  }
}
