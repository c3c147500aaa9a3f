import { SluiceError, show } from '../core/errors.js';
import type {
  Decoder,
  Handler,
  HandlerObject,
  KeyFn,
  PaceOptions,
  RetryOptions,
  SubscriberOptions,
} from './options.js';
import { SubscriberSpec } from './spec.js';
import { validateOptions } from './validate.js';

/**
 * The builder chain: `subscriber('orders', bill).workers(4).build()`. Each method returns a new builder,
 * so a partial chain can be shared and extended; `build()` checks every setting and returns the frozen
 * {@link SubscriberSpec}. Each method sets the {@link SubscriberOptions} field of the same name (see there
 * for defaults). Start one with {@link subscriber}.
 *
 * @example
 * ```ts
 * const refunds = subscriber('refunds', refund)
 *   .workersByKey(8)
 *   .key((m) => m.value.customerId)
 *   .retry({ attempts: 3, backoff: { initialMs: 200 } })
 *   .timeout(10_000)
 *   .build();
 * ```
 *
 * @category Subscribers
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- so a handler's own payload type is taken as is
export class SubscriberBuilder<T = any> {
  /** @internal Made by {@link subscriber}. */
  constructor(
    private readonly topic: string,
    private readonly handler: Handler<T>,
    private readonly defaultName: string,
    private readonly options: SubscriberOptions<T> = {},
  ) {}

  /** The subscriber's name, unique in the app: in logs, and for `app.send`. */
  name(name: string): SubscriberBuilder<T> {
    return this.with({ name });
  }
  /** n long-lived workers (a pool): at most n deliveries in flight, completing in any order. */
  workers(n: number): SubscriberBuilder<T> {
    return this.with({ workers: n, byKey: false });
  }
  /** n sequential lanes by partition key: one key never reorders, different keys run at once. */
  workersByKey(n: number): SubscriberBuilder<T> {
    return this.with({ workers: n, byKey: true });
  }
  /** The partition key. It reads one message, so under `pace.batch` (payload `V[]`) type it `KeyFn<V>`. */
  key<V = T>(fn: KeyFn<V>): SubscriberBuilder<T> {
    return this.with({ key: fn as KeyFn });
  }
  /** The consumer group (default: the app's name). */
  group(group: string): SubscriberBuilder<T> {
    return this.with({ group });
  }
  /**
   * How the message value becomes the payload: a function of the raw bytes, or an object with `parse` of the JSON value
   * (a zod schema fits).
   */
  decode<U>(decoder: Decoder<U>): SubscriberBuilder<U> {
    return this.with({ decode: decoder as unknown as Decoder<T> }) as unknown as SubscriberBuilder<U>;
  }
  /**
   * The handler gets arrays of up to `max` payloads: what the broker has ready when a worker is free. Not with
   * `workersByKey` or `pace`.
   */
  batch(batch: { max: number }): SubscriberBuilder<T> {
    return this.with({ batch });
  }
  /** The retry policy: attempts in all and the backoff between them. */
  retry(retry: RetryOptions): SubscriberBuilder<T> {
    return this.with({ retry });
  }
  /** The dead-letter topic, or `false` to drop rejected and exhausted deliveries (with a warning in the log). */
  deadLetter(topic: string | false): SubscriberBuilder<T> {
    return this.with({ deadLetter: topic });
  }
  /**
   * Durable flow control per key: see {@link PaceOptions}. Its parts are checked by `build()`, their combinations when
   * the app mounts the subscriber.
   */
  pace(pace: PaceOptions): SubscriberBuilder<T> {
    return this.with({ pace });
  }
  /** How long one attempt may take, in milliseconds, before `ctx.signal` aborts and it counts as failed. */
  timeout(ms: number): SubscriberBuilder<T> {
    return this.with({ timeoutMs: ms });
  }

  /**
   * Checks every setting and returns the frozen spec, for `include`.
   *
   * @throws {@link SluiceError} `WORKERS_INVALID`, `CONFIG_INVALID`, `PACE_UNKNOWN_PART` or
   *   `PACE_BAD_DURATION`, naming the subscriber, the field and the value.
   */
  build(): SubscriberSpec<T> {
    const who = `subscriber "${this.options.name ?? this.defaultName}"`;
    return new SubscriberSpec(this.topic, this.handler, validateOptions(this.options, who), this.defaultName);
  }

  private with(patch: SubscriberOptions<T>): SubscriberBuilder<T> {
    return new SubscriberBuilder(this.topic, this.handler, this.defaultName, { ...this.options, ...patch });
  }
}

/** Starts a builder from a handler function or an object with `handle`. */
export function startBuilder<T>(topic: string, handler: Handler<T> | HandlerObject<T>): SubscriberBuilder<T> {
  checkTopic(topic);
  if (typeof handler === 'function') return new SubscriberBuilder(topic, handler, handler.name || topic);
  if (handler !== null && typeof handler === 'object' && typeof handler.handle === 'function') {
    const ctorName = (handler.constructor as { name?: string } | undefined)?.name;
    const name = ctorName && ctorName !== 'Object' ? `${ctorName}.handle` : topic;
    return new SubscriberBuilder(topic, handler.handle.bind(handler), name);
  }
  throw new SluiceError(
    'CONFIG_INVALID',
    `subscriber(${show(topic)}): the handler must be a function or an object with handle(), got ${show(handler)}`,
  );
}

/** A topic is a non-empty string. */
export function checkTopic(topic: unknown): asserts topic is string {
  if (typeof topic !== 'string' || topic === '') {
    throw new SluiceError('CONFIG_INVALID', `subscriber: topic must be a non-empty string, got ${show(topic)}`);
  }
}
