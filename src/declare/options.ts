import type { Context } from '../core/context.js';
import type { Headers } from '../core/message.js';
import type { Middleware } from '../core/middleware.js';
import type { Duration } from './duration.js';
import type { Topic } from './topic.js';
import type { Decoder, HandlerResult } from './decoder.js';

export type {
  Decoder,
  HandlerResult,
  StandardIssue,
  StandardPathSegment,
  StandardResult,
  StandardSchema,
} from './decoder.js';

/**
 * A handler: gets the decoded payload (an array of them for batch subscribers; for a paced subscriber, the
 * run's payload) and the {@link Context}. Returning nothing acks; throwing (or rejecting) is a retry;
 * anything other than a {@link HandlerOutcome} counts as a failed attempt, unless the subscriber publishes
 * its results (`publishTo`, `replies`): then the value is published, and acked once the broker has it.
 *
 * @category Subscribers
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- so a handler's own payload type is taken as is
export type Handler<T = any, R = HandlerResult> = (payload: T, ctx: Context) => R | Promise<R>;

/**
 * An object whose `handle` is the handler: `subscriber('refunds', { handle: (r) => payBack(r) })`.
 *
 * @category Subscribers
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- so a handler's own payload type is taken as is
export interface HandlerObject<T = any, R = HandlerResult> {
  /** The handler, called bound to the object. */
  handle(payload: T, ctx: Context): R | Promise<R>;
}

/**
 * What a key function sees: the decoded value and the message's own key and headers.
 *
 * @category Subscribers
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- so a handler's own payload type is taken as is
export interface KeySource<T = any> {
  /** The decoded value (one message's, also under a batch). */
  readonly value: T;
  /** The message's own key, as text; `undefined` when it has none. */
  readonly key: string | undefined;
  /** The message's headers, as text. */
  readonly headers: Headers;
  /** The topic it was read from. */
  readonly topic: string;
}

/**
 * Picks the partition key of a delivery, for lanes and pace: a string, or `undefined` for "no key". A
 * number (or boolean) counts as its text; a function that throws or returns anything else is logged (a
 * warning), and the message's own key is used.
 *
 * @example
 * ```ts
 * subscriber('refunds', refund).workersByKey(8).key((m) => m.value.customerId);
 * ```
 *
 * @category Subscribers
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- so a handler's own payload type is taken as is
export type KeyFn<T = any> = (message: KeySource<T>) => string | undefined;

/**
 * Retry policy: how often a failed delivery is tried and how long it waits in between. The delay before
 * attempt k+1 is `min(maxMs, initialMs * 2^(k-1))`. A retry waiting for its backoff gives its worker back
 * and holds its partition's watermark (and, with lanes, its key).
 *
 * @example
 * ```ts
 * { attempts: 3, backoff: { initialMs: 200, maxMs: 5_000 } } // waits 200 ms, then 400 ms; then dead-letters
 * ```
 *
 * @category Subscribers
 */
export interface RetryOptions {
  /** Attempts in all, the first included: a positive integer. @default 5 */
  attempts?: number;
  /** Exponential backoff between attempts: `initialMs`, doubling, capped at `maxMs`. */
  backoff?: {
    /** The delay before the second attempt, in milliseconds (>= 0). @default 100 */
    initialMs?: number;
    /** The longest delay, in milliseconds; at least `initialMs`. @default max(initialMs, 30_000) */
    maxMs?: number;
  };
}

/**
 * Pace: durable flow control per key. Each message (or `app.send`) is a start for a key; the key's
 * coordinator gathers starts into a window (`debounce`, `batch`), holds them to a rate (`perMinute`,
 * `drop`) and orders what waits (`order`, `turns`); each window makes one run of the handler. Coordinators
 * are journaled in the app's store, so a crash loses nothing that was acknowledged. `debounce` excludes
 * `batch`, and `perMinute` excludes `drop`; pace excludes a handler `batch` (all `CONFIG_INVALID`). The
 * repository's `docs/pace.md` tells the guarantees.
 *
 * @example
 * ```ts
 * // One reindex per row, 30 s after its latest change, at most 2 minutes after its first.
 * subscriber('row-changes', reindex).key((m) => m.value.rowId)
 *   .pace({ debounce: { window: '30 seconds', maxWait: '2 minutes' } }).build();
 * // Per user, up to 100 clicks in one run, or what came within 10 s of the first; 6 runs a minute at most.
 * subscriber('clicks', storeClicks).pace({ batch: { max: 100, wait: '10 seconds' }, perMinute: 6 }).build();
 * ```
 *
 * @category Pace
 */
export interface PaceOptions {
  /**
   * Starts of a key collapse into one run, `window` after the latest start or `maxWait` after the first,
   * whichever is earlier; the run gets the latest start's event, and `ctx.run.size` counts the starts. A
   * bare duration is the `window`. Without `maxWait` a key that never goes quiet never runs.
   */
  debounce?:
    | Duration
    | {
        /** How long after a key's latest start its run starts. */
        window: Duration;
        /** The longest a window stays open after its first start; at least `window`. */
        maxWait?: Duration;
      };
  /**
   * Events of a key gather until `max` have arrived (the run starts at once) or `wait` has passed since the first; the
   * run gets every event, in arrival order.
   */
  batch?: {
    /**
     * The most events a run carries: a positive integer up to {@link MAX_BATCH}. @default `1_000`, {@link MAX_BATCH}
     */
    max?: number;
    /** How long a batch gathers after its first event. @default '10 seconds' */
    wait?: Duration;
  };
  /**
   * At most this many runs of a key start in any minute (sliding); the others wait in the coordinator's
   * journaled state, in their order, and start the moment the minute allows. A positive integer.
   */
  perMinute?: number;
  /**
   * At most `max` runs of a key start in any `per`; every other start is dropped: answered
   * `{ kind: 'dropped', dropped: true }`, logged, no run made (a dropped broker delivery is acked).
   */
  drop?: {
    /** Runs a key may start in any `per`: a positive integer. */
    max: number;
    /** The span the runs are counted over: a duration above 0. */
    per: Duration;
  };
  /**
   * Among starts that wait (for a rate, a debounce or a free worker), the higher number goes first. Asked
   * once per start and journaled with it; a start whose order throws or is not a finite number is refused
   * with `SEND_INVALID` (a broker delivery is dead-lettered).
   */
  order?: (start: { event: unknown; key: string }) => number;
  /**
   * `'key'`: among waiting runs of equal order, keys take turns at the workers (round-robin) instead of oldest first.
   */
  turns?: 'key';
  /**
   * How long an event ID (and, for broker deliveries, an offset) is remembered to join a duplicate once. @default '10
   * minutes'
   */
  dedup?: Duration;
}

/**
 * The settings of a subscriber: the decorator's options, and the builder's methods (`workers` and `byKey`
 * are `.workers(n)` and `.workersByKey(n)`, `timeoutMs` is `.timeout(ms)`, the others have the field's
 * name). An unknown option, or an unknown field of a nested one, throws {@link SluiceError}
 * `CONFIG_INVALID`; settings are copied and frozen when checked.
 *
 * @example
 * ```ts
 * @subscriber('orders', { workers: 4, retry: { attempts: 3 }, deadLetter: 'orders.failed', timeoutMs: 10_000 })
 * async bill(order: Order, ctx: Context) { await charge(order, { signal: ctx.signal }); }
 * ```
 *
 * @category Subscribers
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- so a handler's own payload type is taken as is
export interface SubscriberOptions<T = any> {
  /**
   * Unique name in the app: in logs, and for `app.send`. Non-empty, without NUL.
   * @default decorator: `Class.method` (`Class.method@topic` when one method carries several unnamed
   *   `@subscriber`s); builder: the function's name, `Class.handle` for an object of a class, else the topic
   */
  name?: string;
  /**
   * Long-lived workers; at most this many deliveries in flight. A positive integer up to
   * {@link MAX_WORKERS}; anything else throws `WORKERS_INVALID`. @default 1
   */
  workers?: number;
  /**
   * Make the workers sequential lanes by partition key: one key's deliveries in order, different keys at once. @default
   * false
   */
  byKey?: boolean;
  /** The partition key, for lanes and pace. @default the broker's key (memory broker: header `partition-key`) */
  key?: KeyFn<T>;
  /** Consumer group. Non-empty, without NUL. @default the app's `name` */
  group?: string;
  /** How the message value becomes the payload. @default `JSON.parse` of the value as UTF-8 text */
  decode?: Decoder<T>;
  /**
   * Hand the handler arrays of up to `max` payloads: what the broker has ready when a worker is free. Not with `byKey`
   * or `pace`.
   */
  batch?: {
    /** The most messages a batch holds: a positive integer. */
    max: number;
  };
  /**
   * How often a failed delivery is tried, and the backoff in between. @default `{ attempts: 5, backoff: { initialMs:
   * 100, maxMs: 30_000 } }`
   */
  retry?: RetryOptions;
  /**
   * Dead-letter topic (non-empty), or `false` to drop rejected and exhausted deliveries, with a warning. @default
   * `<topic>.dlq`, router prefix included
   */
  deadLetter?: string | false;
  /** Durable flow control per key. @default `undefined`: no pace */
  pace?: PaceOptions;
  /**
   * How long one attempt may take, in milliseconds (above 0): then `ctx.signal` aborts and the attempt
   * counts as failed. @default 60_000
   */
  timeoutMs?: number;
  /**
   * Middlewares around each attempt of this subscriber, outermost first, inside the app's and its routers'
   * (see {@link Middleware}). Functions. @default `[]`
   */
  use?: readonly Middleware<T>[];
  /**
   * Topics the handler's return value is published on, each once the handler returned it (`undefined` and
   * a {@link HandlerOutcome} publish nothing); the delivery is acked once the broker has every one of them,
   * and a publish that fails fails the attempt (retried, then dead-lettered). @default `[]`
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- topics of any type: the builder's `.publishTo` checks the type
  publishTo?: readonly Topic<any, unknown>[];
  /**
   * The handler's return value answers the request it was given (`app.request`): it is published to the
   * requester's reply topic. A message that is not a request is handled, and its result published only on
   * `publishTo`. Not with `batch` or `pace`. @default false
   */
  replies?: boolean;
  /**
   * Exactly-once from topic to topic: what the handler publishes (`ctx.publish`, `publishTo`) is held, and
   * published with the input offsets it goes with, in one transaction per input partition, fenced so that a
   * partition's earlier holder can commit nothing once it moved (see docs/publishing.md). Readers that read
   * committed (Sluice's own, and kafkajs's by default) see each output once, however often the handler ran: a
   * failed attempt's publishes are dropped, and so are those of work handled again after a crash. The
   * broker must have transactions (Kafka, memory). Not with `batch` or `pace`. Dead letters stay at least
   * once. @default false
   */
  exactlyOnce?: boolean;
}

/**
 * The subset of settings a router (or the app's `defaults`) may give to what it includes. For each, the
 * nearest layer that sets it wins: the subscriber's own, then the innermost router outwards, then the
 * app's `defaults`, then {@link DEFAULTS}. `retry` merges field by field.
 *
 * @category Subscribers
 */
export type SharedOptions = Pick<
  SubscriberOptions,
  'workers' | 'byKey' | 'group' | 'retry' | 'deadLetter' | 'timeoutMs' | 'decode'
>;

/**
 * Settings of a {@link Router}: a topic prefix, middlewares and defaults for what it includes. Any other option
 * (`name`, `key`, `batch`, `pace`) throws {@link SluiceError} `CONFIG_INVALID`.
 *
 * @category Subscribers
 */
export interface RouterOptions extends SharedOptions {
  /** Prepended to every topic included (nested routers' prefixes concatenate). @default '' */
  prefix?: string;
  /**
   * Middlewares around each attempt of every subscriber the router includes, outermost first: inside an
   * outer router's (and the app's), outside an inner router's and the subscriber's own. @default `[]`
   */
  use?: readonly Middleware[];
}

/** The settings a router (or the app) may give as defaults to what it includes: the keys of {@link SharedOptions}. */
export const SHARED_OPTION_NAMES = [
  'workers',
  'byKey',
  'group',
  'retry',
  'deadLetter',
  'timeoutMs',
  'decode',
] as const satisfies readonly (keyof SharedOptions)[];

/** Every option name, for rejecting misspelled ones. */
export const OPTION_NAMES: ReadonlySet<string> = new Set([
  'name',
  'workers',
  'byKey',
  'key',
  'group',
  'decode',
  'batch',
  'retry',
  'deadLetter',
  'pace',
  'timeoutMs',
  'use',
  'publishTo',
  'replies',
  'exactlyOnce',
]);
