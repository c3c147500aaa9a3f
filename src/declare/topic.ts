import { SluiceError, show } from '../core/errors.js';
import type { RawHeaders } from '../core/message.js';
import type { Decoder, HandlerResult } from './decoder.js';
import { fail, isDecoder } from './checks.js';

/**
 * Settings of a {@link Topic}: how its messages are checked and how they go out.
 *
 * @typeParam T - the type of its messages.
 * @typeParam R - the type of a reply to a request on it (`never`: nobody replies on it).
 * @category Publishing
 */
export interface TopicOptions<T = unknown, R = never> {
  /**
   * Decodes (and checks) a message of the topic for its subscribers: a Standard Schema validator (zod, valibot,
   * arktype), an object with `parse`, or a function of the raw bytes; its type is the topic's type.
   * @default `JSON.parse` of the value as UTF-8 text, taken as a `T`
   */
  readonly schema?: Decoder<T>;
  /** The key a message published on the topic goes with (so one key's messages stay in order); none by default. */
  readonly key?: (value: T) => string | undefined;
  /** Headers every message published on the topic carries (a publish's own headers win). */
  readonly headers?: RawHeaders;
  /**
   * Decodes a reply to a request on the topic (`app.request`), as `schema` decodes a message; its type is the
   * reply's type. A topic with one is a topic somebody replies on.
   */
  readonly reply?: Decoder<R>;
}

/**
 * A topic with a type: one value that is a subscriber's decoder and a publisher's type. Make one with
 * {@link topic}; give it to `subscriber(orders, handler)` (the handler's payload type comes from it), to
 * `.publishTo(invoices)` (the handler's return value is published on it), to `app.publisher(invoices)` and
 * to `app.request(rates, query)`.
 *
 * @typeParam T - the type of its messages.
 * @typeParam R - the type of a reply to a request on it; `never` when nobody replies on it.
 * @category Publishing
 */
export class Topic<T = unknown, R = never> {
  /** The reply type, for type checks only: no value has it. */
  declare readonly __reply?: () => R;
  /** The message type, for type checks only: no value has it. */
  declare readonly __message?: (message: T) => T;

  /** @internal Made by {@link topic}. */
  constructor(
    /** The topic's name on the broker. */
    readonly name: string,
    /** Its settings, checked and frozen. */
    readonly options: Readonly<TopicOptions<T, R>>,
  ) {
    Object.freeze(this);
  }

  /** @internal The key and headers a value published on the topic goes with, beside the publish's own. */
  outgoing(
    value: T,
    own?: { key?: string | Uint8Array; headers?: RawHeaders },
  ): {
    key?: string | Uint8Array;
    headers?: RawHeaders;
  } {
    const key = own?.key ?? this.keyOf(value);
    const { headers } = this.options;
    const merged = headers === undefined ? own?.headers : { ...headers, ...own?.headers };
    return { ...(key !== undefined ? { key } : {}), ...(merged !== undefined ? { headers: merged } : {}) };
  }

  private keyOf(value: T): string | undefined {
    const fn = this.options.key;
    if (fn === undefined) return undefined;
    const key = fn(value);
    if (key !== undefined && typeof key !== 'string')
      throw new SluiceError(
        'CONFIG_INVALID',
        `topic ${show(this.name)}: key must return a string or undefined, got ${show(key)}`,
      );
    return key;
  }
}

/**
 * Makes a {@link Topic}: `topic('orders', { schema: Order })` is a topic of what `Order` validates;
 * `topic<Invoice>('invoices')` one of `Invoice`, taken as JSON gives it.
 *
 * @throws {@link SluiceError} `CONFIG_INVALID` for an empty name (or one with NUL), an unknown setting, or a
 *   setting of the wrong kind.
 *
 * @example
 * ```ts
 * const Order = z.object({ id: z.string(), cents: z.number().int() });
 * const orders = topic('orders', { schema: Order, key: (o) => o.id });
 * const invoices = topic<Invoice>('invoices', { key: (i) => i.orderId });
 * app.withBroker(broker, (b) => b.include(subscriber(orders, (o) => invoiceOf(o)).publishTo(invoices)));
 * ```
 *
 * @category Publishing
 */
export function topic<T = unknown, R = never>(name: string, options: TopicOptions<T, R> = {}): Topic<T, R> {
  const who = `topic ${show(name)}`;
  if (typeof name !== 'string' || name === '' || name.includes('\u0000'))
    throw new SluiceError(
      'CONFIG_INVALID',
      `topic: the name must be a non-empty string without NUL, got ${show(name)}`,
    );
  if (options === null || typeof options !== 'object' || Array.isArray(options))
    fail('CONFIG_INVALID', who, 'options', options, 'an object');
  for (const [field, value] of Object.entries(options)) {
    if (!TOPIC_FIELDS.has(field))
      fail('CONFIG_INVALID', who, field, value, `a known setting (${[...TOPIC_FIELDS].join(', ')})`);
  }
  const { schema, key, headers, reply } = options;
  if (schema !== undefined && !isDecoder(schema))
    fail('CONFIG_INVALID', who, 'schema', schema, 'a Standard Schema, an object with parse(), or a function');
  if (reply !== undefined && !isDecoder(reply))
    fail('CONFIG_INVALID', who, 'reply', reply, 'a Standard Schema, an object with parse(), or a function');
  if (key !== undefined && typeof key !== 'function')
    fail('CONFIG_INVALID', who, 'key', key, 'a function (value) => string | undefined');
  if (headers !== undefined && (headers === null || typeof headers !== 'object' || Array.isArray(headers)))
    fail('CONFIG_INVALID', who, 'headers', headers, 'an object of header names to values');
  return new Topic(name, Object.freeze({ ...options, ...(headers ? { headers: Object.freeze({ ...headers }) } : {}) }));
}

const TOPIC_FIELDS: ReadonlySet<string> = new Set(['schema', 'key', 'headers', 'reply']);

/** True for a {@link Topic}. */
export function isTopic(value: unknown): value is Topic<unknown, unknown> {
  return value instanceof Topic;
}

/**
 * What a handler whose results are `R` publishes: `R` without the outcomes and the nothing that publish
 * nothing (`undefined`, `void`, a {@link HandlerOutcome}).
 *
 * @category Publishing
 */
export type PublishedOf<R> = Exclude<Awaited<R>, HandlerResult | null>;
