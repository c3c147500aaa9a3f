import { SluiceError, show } from '../core/errors.js';
import type { Middleware } from '../core/middleware.js';
import type {
  Decoder,
  Handler,
  HandlerObject,
  HandlerResult,
  KeyFn,
  PaceOptions,
  RetryOptions,
  SubscriberOptions,
} from './options.js';
import { parseOptions } from './parse.js';
import { SubscriberSpec } from './spec.js';
import type { PublishedOf, Topic } from './topic.js';

/**
 * What `.publishTo(t)` checks a topic of `U` against, for a handler whose results are `R`: the topic itself
 * when what the handler returns is a `U`, else one that names the handler's type, so that the call does not
 * compile.
 *
 * @category Publishing
 */
export type PublishableOn<R, U> = [PublishedOf<R>] extends [U]
  ? unknown
  : {
      /** What the handler returns, which is not the topic's type. */
      readonly handlerReturns: PublishedOf<R>;
    };

/**
 * What `.replies()` takes for a handler whose results are `R` on a topic whose replies are `Reply`: nothing
 * when the handler returns a `Reply`, else an argument no call gives, whose type names both, so that the call
 * does not compile.
 *
 * @category Publishing
 */
export type RepliesCheck<R, Reply> = [PublishedOf<R>] extends [Reply]
  ? []
  : [
      mismatch: {
        /** What the handler returns. */
        readonly handlerReturns: PublishedOf<R>;
        /** What the topic's replies are (`never`: the topic was made without `reply`). */
        readonly topicReplies: Reply;
      },
    ];

/**
 * What a decoder may return for a handler of `T`: a `T`, or, for a handler of arrays (a batch handler, or
 * `pace.batch`), one item of it.
 *
 * @category Subscribers
 */
export type DecodedFor<T> = T | (T extends readonly (infer E)[] ? E : never);

/**
 * The payload a handler gets for decoded values of `T`: `T`, or `T[]` once `batch` (or `pace.batch`) gathers
 * them.
 *
 * @category Subscribers
 */
export type PayloadOf<T, Many extends boolean> = Many extends true ? T[] : T;

/**
 * What `build()` takes for a handler whose results are `R`: nothing when it returns nothing to publish, or
 * when a publisher (or `replies`) takes what it returns (`Sent`); else an argument no call gives, whose type
 * says so, so that the call does not compile.
 *
 * @category Publishing
 */
export type BuildCheck<R, Sent extends boolean> = Sent extends true
  ? []
  : [PublishedOf<R>] extends [never]
    ? []
    : [
        unpublished: {
          /** What the handler returns, which nothing publishes. */
          readonly handlerReturns: PublishedOf<R>;
          /** What to add. */
          readonly add: '.publishTo(topic) or .replies()';
        },
      ];

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
export class SubscriberBuilder<T = any, R = HandlerResult, Reply = unknown, Sent extends boolean = false> {
  /** Whether a publisher (or `replies`) takes the handler's results: for `include`'s type check only. */
  declare private readonly sent?: Sent;
  /** What the topic's replies are, for `replies`' type check only. */
  declare private readonly reply?: (reply: Reply) => Reply;

  /** @internal Made by {@link subscriber} and by {@link TopicBuilder.handle}. */
  constructor(
    private readonly topic: string,
    private readonly handler: Handler<T, R>,
    private readonly defaultName: string,
    private readonly options: SubscriberOptions<T> = {},
  ) {}

  /** The subscriber's name, unique in the app: in logs, and for `app.send`. */
  name(name: string): SubscriberBuilder<T, R, Reply, Sent> {
    return this.with({ name });
  }
  /** n long-lived workers (a pool): at most n deliveries in flight, completing in any order. */
  workers(n: number): SubscriberBuilder<T, R, Reply, Sent> {
    return this.with({ workers: n, byKey: false });
  }
  /** n sequential lanes by partition key: one key never reorders, different keys run at once. */
  workersByKey(n: number): SubscriberBuilder<T, R, Reply, Sent> {
    return this.with({ workers: n, byKey: true });
  }
  /** The partition key. It reads one message, so under `pace.batch` (payload `V[]`) type it `KeyFn<V>`. */
  key<V = T>(fn: KeyFn<V>): SubscriberBuilder<T, R, Reply, Sent> {
    return this.with({ key: fn as KeyFn });
  }
  /** The consumer group (default: the app's name). */
  group(group: string): SubscriberBuilder<T, R, Reply, Sent> {
    return this.with({ group });
  }
  /**
   * How the message value becomes the payload: a function of the raw bytes, or an object with `parse` of the JSON value
   * (a zod schema fits). What it returns must be what the handler takes (or, for a handler of arrays, one item of
   * it): `subscriber('orders', (o: Order) => …).decode(refundSchema)` does not compile. To let the decoder's type
   * give the handler's, start with the decoder: `subscriber('orders').decode(Order).handle((o, ctx) => …)`.
   */
  decode(decoder: Decoder<DecodedFor<T>>): SubscriberBuilder<T, R, Reply, Sent> {
    return this.with({ decode: decoder as Decoder<T> }); // for a handler of arrays, one item: the type says T
  }
  /**
   * The handler gets arrays of up to `max` payloads: what the broker has ready when a worker is free. Not with
   * `workersByKey` or `pace`.
   */
  batch(batch: { max: number }): SubscriberBuilder<T, R, Reply, Sent> {
    return this.with({ batch });
  }
  /** The retry policy: attempts in all and the backoff between them. */
  retry(retry: RetryOptions): SubscriberBuilder<T, R, Reply, Sent> {
    return this.with({ retry });
  }
  /** The dead-letter topic, or `false` to drop rejected and exhausted deliveries (with a warning in the log). */
  deadLetter(topic: string | false): SubscriberBuilder<T, R, Reply, Sent> {
    return this.with({ deadLetter: topic });
  }
  /** Durable flow control per key: see {@link PaceOptions}. Checked by `build()`, each part and their combination. */
  pace(pace: PaceOptions): SubscriberBuilder<T, R, Reply, Sent> {
    return this.with({ pace });
  }
  /** How long one attempt may take, in milliseconds, before `ctx.signal` aborts and it counts as failed. */
  timeout(ms: number): SubscriberBuilder<T, R, Reply, Sent> {
    return this.with({ timeoutMs: ms });
  }
  /**
   * Adds a middleware around each attempt of this subscriber, inside the app's and its routers'; in the order
   * added, the first outermost. Its `ctx.payload` is what the handler takes. See {@link Middleware}.
   */
  use(middleware: Middleware<T>): SubscriberBuilder<T, R, Reply, Sent> {
    return this.with({ use: [...(this.options.use ?? []), middleware] });
  }

  /**
   * Publishes the handler's return value on `topic` (see {@link SubscriberOptions.publishTo}); several
   * publishers each get it. The topic's type must take what the handler returns: a handler of invoices
   * `.publishTo(refunds)` does not compile.
   */
  publishTo<U>(topic: Topic<U, unknown> & PublishableOn<R, U>): SubscriberBuilder<T, R, Reply, true> {
    const given: Topic = topic as Topic;
    return this.with({ publishTo: [...(this.options.publishTo ?? []), given] }) as SubscriberBuilder<T, R, Reply, true>;
  }
  /**
   * Answers requests (`app.request`) with the handler's return value (see {@link SubscriberOptions.replies}).
   * On a topic made with `reply`, the handler must return that type; on one made without, nobody may reply.
   */
  replies(...check: RepliesCheck<R, Reply>): SubscriberBuilder<T, R, Reply, true> {
    void check;
    return this.with({ replies: true }) as SubscriberBuilder<T, R, Reply, true>;
  }

  /**
   * Commits what the handler publishes with its input offsets, in one transaction per input partition (see
   * {@link SubscriberOptions.exactlyOnce}).
   */
  exactlyOnce(): SubscriberBuilder<T, R, Reply, Sent> {
    return this.with({ exactlyOnce: true });
  }

  /**
   * Parses every setting and returns the frozen spec, for `include`.
   *
   * @throws {@link SluiceError} `WORKERS_INVALID`, `CONFIG_INVALID`, `PACE_UNKNOWN_PART` or
   *   `PACE_BAD_DURATION`, naming the subscriber, the field and the value.
   */
  build(...check: BuildCheck<R, Sent>): SubscriberSpec<T> {
    void check;
    const who = `subscriber "${this.options.name ?? this.defaultName}"`;
    const handler = this.handler as Handler<T>; // a value it returns goes to its publishers
    return new SubscriberSpec(this.topic, handler, parseOptions(this.options, who), this.defaultName);
  }

  private with(patch: SubscriberOptions<T>): SubscriberBuilder<T, R, Reply, Sent> {
    return new SubscriberBuilder(this.topic, this.handler, this.defaultName, { ...this.options, ...patch });
  }
}

/**
 * A builder chain that starts with the decoder and ends with the handler, so that the decoder's type gives the
 * handler's: `subscriber('orders').decode(Order).workers(4).handle((order, ctx) => …)`. After `batch` (or a
 * `pace` with `batch`) the handler gets an array. `handle` returns a {@link SubscriberBuilder}, to `include` as it
 * is or to `build()`. Each method returns a new builder, and sets the {@link SubscriberOptions} field of the same
 * name.
 *
 * @example
 * ```ts
 * const Order = z.object({ id: z.string(), cents: z.number().int() });
 * subscriber('orders').decode(Order).workers(4).handle(async (order, ctx) => charge(order.cents, ctx.signal));
 * subscriber('clicks').decode(Click).batch({ max: 100 }).handle((clicks) => store(clicks)); // clicks: Click[]
 * ```
 *
 * @category Subscribers
 */
export class TopicBuilder<T, Many extends boolean = false, Reply = unknown> {
  /** What the topic's replies are, for `replies`' type check only. */
  declare private readonly reply?: (reply: Reply) => Reply;

  /** @internal Made by `subscriber(topic).decode(decoder)`. */
  constructor(
    private readonly topic: string,
    private readonly options: SubscriberOptions,
  ) {}

  /** The subscriber's name, unique in the app: in logs, and for `app.send`. @default the handler's name */
  name(name: string): TopicBuilder<T, Many, Reply> {
    return this.with({ name });
  }
  /** n long-lived workers (a pool): at most n deliveries in flight, completing in any order. */
  workers(n: number): TopicBuilder<T, Many, Reply> {
    return this.with({ workers: n, byKey: false });
  }
  /** n sequential lanes by partition key: one key never reorders, different keys run at once. */
  workersByKey(n: number): TopicBuilder<T, Many, Reply> {
    return this.with({ workers: n, byKey: true });
  }
  /** The partition key: it reads one message, whose decoded value is a `T`. */
  key(fn: KeyFn<T>): TopicBuilder<T, Many, Reply> {
    return this.with({ key: fn as KeyFn });
  }
  /** The consumer group (default: the app's name). */
  group(group: string): TopicBuilder<T, Many, Reply> {
    return this.with({ group });
  }
  /** Another decoder, in place of the one given: its type is the handler's from here on. */
  decode<U>(decoder: Decoder<U>): TopicBuilder<U, Many, Reply> {
    return new TopicBuilder(this.topic, { ...this.options, decode: decoder });
  }
  /** The handler gets arrays of up to `max` decoded values. Not with `workersByKey` or `pace`. */
  batch(batch: { max: number }): TopicBuilder<T, true, Reply> {
    return new TopicBuilder(this.topic, { ...this.options, batch });
  }
  /** The retry policy: attempts in all and the backoff between them. */
  retry(retry: RetryOptions): TopicBuilder<T, Many, Reply> {
    return this.with({ retry });
  }
  /** The dead-letter topic, or `false` to drop rejected and exhausted deliveries (with a warning in the log). */
  deadLetter(topic: string | false): TopicBuilder<T, Many, Reply> {
    return this.with({ deadLetter: topic });
  }
  /** Durable flow control per key: see {@link PaceOptions}. With `batch`, the handler gets every event of a run. */
  pace<P extends PaceOptions>(pace: P): TopicBuilder<T, 'batch' extends keyof P ? true : Many, Reply> {
    return new TopicBuilder(this.topic, { ...this.options, pace });
  }
  /** How long one attempt may take, in milliseconds, before `ctx.signal` aborts and it counts as failed. */
  timeout(ms: number): TopicBuilder<T, Many, Reply> {
    return this.with({ timeoutMs: ms });
  }
  /** Adds a middleware around each attempt, as {@link SubscriberBuilder.use} does; `ctx.payload` is the handler's. */
  use(middleware: Middleware<PayloadOf<T, Many>>): TopicBuilder<T, Many, Reply> {
    return this.with({ use: [...((this.options.use ?? []) as Middleware[]), middleware as Middleware] });
  }

  /**
   * The handler, which gets what the decoder returns (an array of them after `batch`): a function, or an object
   * with `handle` (called bound to it). Settings are parsed at `build()` (or at `include`).
   *
   * @throws {@link SluiceError} `CONFIG_INVALID` for a handler that is neither.
   */
  handle(
    handler: Handler<PayloadOf<T, Many>> | HandlerObject<PayloadOf<T, Many>>,
  ): SubscriberBuilder<PayloadOf<T, Many>> {
    const { handle, defaultName } = handlerOf(this.topic, handler);
    return new SubscriberBuilder(
      this.topic,
      handle,
      defaultName,
      this.options as SubscriberOptions<PayloadOf<T, Many>>,
    );
  }

  private with(patch: SubscriberOptions): TopicBuilder<T, Many, Reply> {
    return new TopicBuilder(this.topic, { ...this.options, ...patch });
  }
}

/** Starts a builder from a handler function or an object with `handle`. */
export function startBuilder<T, R, Reply = unknown>(
  topic: string,
  handler: Handler<T, R> | HandlerObject<T, R>,
  options: SubscriberOptions = {},
): SubscriberBuilder<T, R, Reply> {
  checkTopic(topic);
  const { handle, defaultName } = handlerOf(topic, handler);
  return new SubscriberBuilder(topic, handle, defaultName, options as SubscriberOptions<T>);
}

/** A handler function as it is, or an object's `handle` bound to it; and the subscriber's default name. */
function handlerOf<T, R>(
  topic: string,
  handler: Handler<T, R> | HandlerObject<T, R>,
): { handle: Handler<T, R>; defaultName: string } {
  if (typeof handler === 'function') return { handle: handler, defaultName: handler.name || topic };
  if (handler !== null && typeof handler === 'object' && typeof handler.handle === 'function') {
    const ctorName = (handler.constructor as { name?: string } | undefined)?.name;
    const defaultName = ctorName && ctorName !== 'Object' ? `${ctorName}.handle` : topic;
    return { handle: handler.handle.bind(handler), defaultName };
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
