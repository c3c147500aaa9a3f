import { SluiceError, show } from '../core/errors.js';
import type { Decoder, Handler, HandlerObject, KeyFn, PaceOptions, RetryOptions, SubscriberOptions } from './options.js';
import { SubscriberSpec } from './spec.js';
import { validateOptions } from './validate.js';

/**
 * The builder chain: `subscriber('orders', bill).workers(4).build()`. Each method returns a new builder;
 * `build()` checks every setting and returns the frozen {@link SubscriberSpec}.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- so a handler's own payload type is taken as is
export class SubscriberBuilder<T = any> {
  constructor(
    private readonly topic: string,
    private readonly handler: Handler<T>,
    private readonly defaultName: string,
    private readonly options: SubscriberOptions<T> = {},
  ) {}

  name(name: string): SubscriberBuilder<T> { return this.with({ name }); }
  /** n long-lived workers: at most n deliveries in flight. */
  workers(n: number): SubscriberBuilder<T> { return this.with({ workers: n, byKey: false }); }
  /** n sequential lanes by partition key: one key never reorders, different keys run at once. */
  workersByKey(n: number): SubscriberBuilder<T> { return this.with({ workers: n, byKey: true }); }
  /** The partition key. It reads one message, so under `pace.batch` (payload `V[]`) type it `KeyFn<V>`. */
  key<V = T>(fn: KeyFn<V>): SubscriberBuilder<T> { return this.with({ key: fn as KeyFn }); }
  group(group: string): SubscriberBuilder<T> { return this.with({ group }); }
  decode<U>(decoder: Decoder<U>): SubscriberBuilder<U> { return this.with({ decode: decoder as unknown as Decoder<T> }) as unknown as SubscriberBuilder<U>; }
  batch(batch: { max: number }): SubscriberBuilder<T> { return this.with({ batch }); }
  retry(retry: RetryOptions): SubscriberBuilder<T> { return this.with({ retry }); }
  deadLetter(topic: string | false): SubscriberBuilder<T> { return this.with({ deadLetter: topic }); }
  pace(pace: PaceOptions): SubscriberBuilder<T> { return this.with({ pace }); }
  /** How long one attempt may take before `ctx.signal` aborts and it counts as failed. */
  timeout(ms: number): SubscriberBuilder<T> { return this.with({ timeoutMs: ms }); }

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
  throw new SluiceError('CONFIG_INVALID', `subscriber(${show(topic)}): the handler must be a function or an object with handle(), got ${show(handler)}`);
}

/** A topic is a non-empty string. */
export function checkTopic(topic: unknown): asserts topic is string {
  if (typeof topic !== 'string' || topic === '') {
    throw new SluiceError('CONFIG_INVALID', `subscriber: topic must be a non-empty string, got ${show(topic)}`);
  }
}
