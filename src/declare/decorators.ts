import 'reflect-metadata';
import { SluiceError, show } from '../core/errors.js';
import { checkTopic, startBuilder, TopicBuilder, type SubscriberBuilder } from './builder.js';
import type { Decoder, Handler, HandlerObject, HandlerResult, SubscriberOptions } from './options.js';
import { parseOptions, type ParsedOptions } from './parse.js';
import { SubscriberSpec } from './spec.js';
import { isTopic, type Topic } from './topic.js';

/** One `@subscriber` on a method: its topic and its settings, parsed when the decorator was applied. */
interface Declared {
  readonly topic: string;
  readonly parsed: ParsedOptions;
}

const METADATA_KEY = 'sluice:subscribers';
/** Standard (TC39) decorators see the method function, not the prototype: they are kept by function. */
const declaredByFunction = new WeakMap<object, Declared[]>();

/**
 * What `@subscriber(topic, options)` returns: a method decorator usable both as a legacy
 * (`experimentalDecorators`) and a standard (TC39) one.
 *
 * @category Subscribers
 */
export type SubscriberDecorator = {
  (target: object, propertyKey: string | symbol, descriptor?: PropertyDescriptor): void;
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type -- handed whatever method it decorates
  (value: Function, context: { kind: 'method'; name: string | symbol }): void;
};

/**
 * What `subscriber(topic)`, without options, offers besides decorating a method: a builder chain that starts
 * with the decoder (whose type then gives the handler's), or with the handler.
 *
 * @category Subscribers
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- so a handler's own payload type is taken as is
export interface SubscriberStart<T = any, Reply = unknown> {
  /**
   * Starts a chain with the decoder: `subscriber('orders').decode(Order).handle((order, ctx) => …)`; the handler
   * gets what the decoder returns. See {@link TopicBuilder}.
   */
  decode<U>(decoder: Decoder<U>): TopicBuilder<U, false, Reply>;
  /** Starts a chain with the handler, as `subscriber(topic, handler)` does. */
  handle<U extends T = T, R = HandlerResult>(
    handler: Handler<U, R> | HandlerObject<U, R>,
  ): SubscriberBuilder<U, R, Reply>;
}

/**
 * Starts a builder chain for `handler` on `topic`: `subscriber('orders', bill).workers(4).build()`. It
 * produces the same {@link SubscriberSpec} as the decorator.
 *
 * @param topic - the topic, a non-empty string (a router's prefix is prepended at mount).
 * @param handler - a function `(payload, ctx)`, or an object with `handle(payload, ctx)` (called bound
 *   to it).
 * @throws {@link SluiceError} `CONFIG_INVALID` for an empty topic.
 *
 * @example
 * ```ts
 * async function bill(order: Order, ctx: Context) { await charge(order, { signal: ctx.signal }); }
 * app.withBroker(broker, (b) => b.include(subscriber('orders', bill).workers(4).build()));
 * ```
 *
 * @category Subscribers
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- so a handler's own payload type is taken as is
export function subscriber<T = any, R = HandlerResult>(
  topic: string,
  handler: Handler<T, R> | HandlerObject<T, R>,
): SubscriberBuilder<T, R>;
/**
 * Starts a builder chain for `handler` on a {@link Topic}: the handler's payload is the topic's type, and the
 * topic's `schema` decodes its messages (`.decode` may give another). Otherwise as `subscriber(name, handler)`.
 *
 * @example
 * ```ts
 * const orders = topic('orders', { schema: Order });
 * subscriber(orders, (order) => invoiceOf(order)).publishTo(invoices); // order: what Order validates
 * ```
 */
export function subscriber<T, Reply, R = HandlerResult>(
  topic: Topic<T, Reply>,
  handler: Handler<T, R> | HandlerObject<T, R>,
): SubscriberBuilder<T, R, Reply>;
/**
 * `subscriber(topic)` of a {@link Topic}: as `subscriber(name)`, its handler's payload the topic's type and its
 * messages decoded by the topic's `schema`.
 */
export function subscriber<T, Reply>(topic: Topic<T, Reply>): SubscriberDecorator & SubscriberStart<T, Reply>;
/** `@subscriber(topic, options)` of a {@link Topic}: as with a name, its messages decoded by the topic's `schema`. */
export function subscriber<T, Reply>(topic: Topic<T, Reply>, options: SubscriberOptions<T>): SubscriberDecorator;
/**
 * `subscriber(topic)`, without options: the `@subscriber` decorator with no settings (see the form with
 * options), which also starts a builder chain — with the decoder, whose type then gives the handler's
 * (`subscriber('orders').decode(Order).handle((order, ctx) => …)`), or with the handler.
 *
 * @param topic - the topic, a non-empty string (a router's prefix is prepended at mount).
 * @throws {@link SluiceError} `CONFIG_INVALID` for an empty topic.
 *
 * @example
 * ```ts
 * const Order = z.object({ id: z.string(), cents: z.number().int() });
 * app.withBroker(broker, (b) =>
 *   b.include(subscriber('orders').decode(Order).workers(4).handle((order, ctx) => charge(order.cents, ctx.signal))),
 * );
 * ```
 *
 * @category Subscribers
 */
export function subscriber(topic: string): SubscriberDecorator & SubscriberStart;
/**
 * `@subscriber(topic, options?)` on a handler method: the method becomes a subscriber of `topic`, bound
 * to the instance that `include` gets (or makes with `new`, no arguments, when given the class). A
 * method can carry several. Import `reflect-metadata` once at the top of your entry file.
 *
 * @param topic - the topic, a non-empty string (a router's prefix is prepended at mount).
 * @param options - the subscriber's settings; parsed when the decorator is applied.
 * @throws {@link SluiceError} `CONFIG_INVALID` for an empty topic, options that are not an object, or (when
 *   the decorator is applied) a bad setting; `WORKERS_INVALID`, `PACE_UNKNOWN_PART` and
 *   `PACE_BAD_DURATION` as their settings say.
 *
 * @example
 * ```ts
 * import 'reflect-metadata';
 *
 * class Billing {
 *   @subscriber('orders', { workers: 4 })
 *   async bill(order: Order, ctx: Context) { await charge(order, { signal: ctx.signal }); }
 * }
 * app.withBroker(broker, (b) => b.include(Billing));
 * ```
 *
 * @category Subscribers
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- so a handler's own payload type is taken as is
export function subscriber<T = any>(topic: string, options?: SubscriberOptions<T>): SubscriberDecorator;
export function subscriber(
  given: string | Topic<unknown, unknown>,
  second?: unknown,
): SubscriberBuilder | SubscriberDecorator | (SubscriberDecorator & SubscriberStart) {
  const topic = isTopic(given) ? given.name : given;
  const schema = isTopic(given) ? given.options.schema : undefined;
  const decoded: SubscriberOptions = schema === undefined ? {} : { decode: schema };
  if (
    typeof second === 'function' ||
    (second !== null && typeof second === 'object' && typeof (second as HandlerObject).handle === 'function')
  ) {
    return startBuilder(topic, second as Handler<unknown>, decoded);
  }
  checkTopic(topic);
  if (second !== undefined && (second === null || typeof second !== 'object' || Array.isArray(second))) {
    throw new SluiceError(
      'CONFIG_INVALID',
      `subscriber(${show(topic)}): the second argument must be a handler (a function or an object with handle()) or decorator options, got ${show(second)}`,
    );
  }
  const raw = { ...decoded, ...((second ?? {}) as SubscriberOptions) };
  // Parsed when the decorator is applied, when the method (and, for legacy decorators, the class) is known.
  const decorator = ((target: unknown, context: unknown) => {
    if (typeof target === 'function' && typeof context === 'object' && context !== null && 'kind' in context) {
      const { kind, name } = context as { kind: string; name: string | symbol };
      if (kind !== 'method')
        throw new SluiceError('CONFIG_INVALID', `@subscriber(${show(topic)}) decorates methods only`);
      // A standard decorator sees the method, not its class: the subscriber is named by the method alone.
      const declared: Declared = { topic, parsed: parseOptions(raw, whoIs(raw, String(name), topic)) };
      declaredByFunction.set(target, [...(declaredByFunction.get(target) ?? []), declared]);
      return;
    }
    const method = String(context);
    const className = (target as { constructor?: { name?: string } }).constructor?.name;
    const declared: Declared = {
      topic,
      parsed: parseOptions(raw, whoIs(raw, className ? `${className}.${method}` : method, topic)),
    };
    const list =
      (Reflect.getOwnMetadata(METADATA_KEY, target as object) as Record<string, Declared[]> | undefined) ?? {};
    Reflect.defineMetadata(METADATA_KEY, { ...list, [method]: [...ownList(list, method), declared] }, target as object);
  }) as SubscriberDecorator;
  if (second !== undefined) return decorator;
  const start: SubscriberStart = {
    decode: (decoder) => new TopicBuilder(topic, { decode: decoder }),
    handle: (handler) => startBuilder(topic, handler, decoded),
  };
  return Object.assign(decorator, start);
}

/**
 * Names a decorated subscriber in errors as the builder does: its `name` option, else `Class.method`; and its topic.
 */
function whoIs(raw: SubscriberOptions, defaultName: string, topic: string): string {
  const named = typeof raw.name === 'string' && raw.name.trim() !== '' ? raw.name : defaultName;
  return `subscriber "${named}" (@subscriber(${show(topic)}))`;
}

/** True when the class (or the instance's class) has `@subscriber` methods. */
export function hasSubscribers(target: object): boolean {
  const proto =
    typeof target === 'function'
      ? (target as { prototype: object }).prototype
      : (Object.getPrototypeOf(target) as object | null);
  return proto !== null && proto !== undefined && declaredOn(proto).length > 0;
}

/** The specs of a decorated class (instantiated with `new`, no arguments) or instance. */
export function specsOf(target: object): SubscriberSpec[] {
  const instance = typeof target === 'function' ? new (target as new () => object)() : target;
  const className = instance.constructor?.name ?? 'Object';
  const found = declaredOn(Object.getPrototypeOf(instance) as object);
  // `Class.method`; where one method carries several unnamed @subscriber, `Class.method@topic` each.
  const unnamed = new Map<string, number>();
  for (const { method, declared } of found)
    if (!declared.parsed.options.name) unnamed.set(method, (unnamed.get(method) ?? 0) + 1);
  return found.map(({ method, declared }) => {
    const fn = (instance as Record<string, unknown>)[method] as Handler;
    const defaultName =
      (unnamed.get(method) ?? 0) > 1 ? `${className}.${method}@${declared.topic}` : `${className}.${method}`;
    return new SubscriberSpec(declared.topic, fn.bind(instance), declared.parsed, defaultName);
  });
}

function declaredOn(proto: object): { method: string; declared: Declared }[] {
  const found: { method: string; declared: Declared }[] = [];
  const seen = new Set<string>();
  for (let p: object | null = proto; p && p !== Object.prototype; p = Object.getPrototypeOf(p) as object | null) {
    const legacy = (Reflect.getOwnMetadata(METADATA_KEY, p) as Record<string, Declared[]> | undefined) ?? {};
    for (const method of Object.getOwnPropertyNames(p)) {
      if (method === 'constructor' || seen.has(method)) continue;
      const value: unknown = Object.getOwnPropertyDescriptor(p, method)?.value;
      const list = [
        ...ownList(legacy, method),
        ...(typeof value === 'function' ? (declaredByFunction.get(value) ?? []) : []),
      ];
      if (list.length > 0) seen.add(method);
      for (const declared of list) found.push({ method, declared });
    }
  }
  return found;
}

/** The `@subscriber`s of `method` in a class's metadata: its own key only, so `toString` is not `Object`'s. */
function ownList(byMethod: Record<string, Declared[]>, method: string): Declared[] {
  return Object.hasOwn(byMethod, method) ? byMethod[method]! : [];
}
