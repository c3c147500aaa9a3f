import { SluiceError, show } from '../core/errors.js';
import type { Middleware } from '../core/middleware.js';
import { SubscriberBuilder, TopicBuilder, type BuildCheck } from './builder.js';
import { hasSubscribers, specsOf } from './decorators.js';
import type { Decoder, RetryOptions, RouterOptions, SharedOptions } from './options.js';
import { parseRouterOptions } from './parse.js';
import { SubscriberSpec } from './spec.js';

export type { RouterOptions } from './options.js';

/** @internal Built-in objects that `include` could only refuse: none of them has `@subscriber` methods. */
type BuiltIn =
  | Date
  | RegExp
  | Error
  | ReadonlyMap<unknown, unknown>
  | ReadonlySet<unknown>
  | WeakMap<WeakKey, unknown>
  | WeakSet<WeakKey>
  | Promise<unknown>
  | readonly unknown[]
  | ArrayBufferLike
  | ArrayBufferView;

/**
 * @internal True when instances of type `O` may have `@subscriber` methods, as far as TypeScript can tell: they have a
 * public method, or private or protected members (which it cannot see into). Decorators do not change types,
 * so a class whose methods carry no `@subscriber` still passes; `include` refuses it when it runs.
 */
type MaySubscribe<O> = {
  [K in keyof O]-?: O[K] extends (...args: never[]) => unknown ? true : never;
}[keyof O] extends never
  ? Pick<O, keyof O> extends O
    ? false
    : true
  : true;

/**
 * What `include` expects in place of an item it refuses: a type that no value has, whose `reason` says what is
 * wrong, so the compiler's error names it.
 *
 * @category Subscribers
 */
export interface NotIncludable<Reason extends string> {
  /** Why `include` refuses the item. */
  readonly reason: Reason;
  /** No value has this property. */
  readonly notIncludable: never;
}

/**
 * What `include` checks each item against: for an item of type `X`, `X` itself when `include` takes it — a
 * {@link SubscriberSpec}, a {@link SubscriberBuilder}, a {@link Router}, a class it can make with `new` and
 * no arguments whose instances may have `@subscriber` methods, or such an instance — and otherwise a
 * {@link NotIncludable} whose `reason` says why not, so the call does not compile. `include(new Date())`,
 * `include(class {})`, `include({})`, `include(subscriber('t').decode(d))` (no handler yet) and a class whose
 * constructor needs arguments are refused. TypeScript cannot see decorators: a class (or instance) with
 * methods, none of them a `@subscriber`, and an object literal with a method, pass here and are refused by
 * `include` when it runs, with `CONFIG_INVALID`.
 *
 * @category Subscribers
 */
export type Includable<X> = 0 extends 1 & X
  ? X // any: not checked
  : X extends SubscriberBuilder<infer _T, infer R, infer _Reply, infer Sent>
    ? BuildCheck<R, Sent> extends []
      ? X
      : NotIncludable<'a handler that returns a value nothing publishes: add .publishTo(topic) or .replies()'>
    : X extends SubscriberSpec | Router
      ? X
      : X extends TopicBuilder<infer _T, infer _Many>
        ? NotIncludable<'a subscriber without a handler yet: end its chain with .handle(...)'>
        : X extends abstract new (...args: never[]) => infer O
          ? X extends new () => object
            ? MaySubscribe<O> extends true
              ? X
              : NotIncludable<'a class without methods, so none with @subscriber'>
            : NotIncludable<'a class that include cannot make with new and no arguments: pass an instance'>
          : X extends
                | BuiltIn
                | ((...args: never[]) => unknown)
                | string
                | number
                | boolean
                | bigint
                | symbol
                | null
                | undefined
            ? NotIncludable<'not a subscriber spec, a builder, a router, or a class with @subscriber methods or an instance of one'>
            : MaySubscribe<X> extends true
              ? X
              : NotIncludable<'an object without methods, so none with @subscriber'>;

/** A subscriber with the router layers it was included through, outermost last. */
export interface Mounted {
  readonly spec: SubscriberSpec;
  readonly prefix: string;
  /** Defaults from the innermost router outwards. */
  readonly layers: readonly SharedOptions[];
  /** The routers' middlewares, the outermost router's first. */
  readonly middlewares?: readonly Middleware[];
}

/**
 * Groups subscribers under a topic prefix and shared defaults, without a connection: a registrator.
 * A subscriber's own settings win over its router's, and an inner router's over an outer one's. The
 * setting methods change the router and return it; its settings are read when the app mounts it (at
 * `app.withBroker`), so a setting made after `include` still applies to what was included before. Once
 * mounted, a change throws {@link SluiceError} `APP_STATE`. The `b` in `app.withBroker(broker, (b) => ...)`
 * is itself a router, without a prefix.
 *
 * @example
 * ```ts
 * const billing = new Router({ prefix: 'billing.', workers: 4, retry: { attempts: 3 } });
 * billing.include(Billing).include(subscriber('refunds', refund).build());
 * const eu = new Router({ prefix: 'eu.', group: 'billing-eu' }).workersByKey(2);
 * billing.include(eu.include(subscriber('invoices', invoice).build())); // topic: billing.eu.invoices
 * app.withBroker(broker, (b) => b.include(billing));
 * ```
 *
 * @category Subscribers
 */
export class Router {
  private readonly items: (SubscriberSpec | Router)[] = [];
  private settings: Readonly<RouterOptions>;
  /** Set once an app mounted this router (`withBroker` read it): later changes would be ignored, so they throw. */
  private mountedBy: string | undefined;

  /**
   * A router with nothing included yet.
   *
   * @param options - the prefix and the defaults, checked as a subscriber's settings are.
   * @throws {@link SluiceError} `CONFIG_INVALID` (or `WORKERS_INVALID`) for a bad or unknown setting.
   */
  constructor(options: RouterOptions = {}) {
    this.settings = parseRouterOptions(options);
  }

  /**
   * Adds subscribers: specs, builders (built here), routers, decorated classes (made with `new`, no
   * arguments) or instances of one. Chainable.
   *
   * @throws {@link SluiceError} `CONFIG_INVALID` for anything else; `APP_STATE` once an app mounted the
   *   router.
   */
  include<const I extends readonly unknown[]>(...items: I & { readonly [K in keyof I]: Includable<I[K]> }): this {
    this.assertOpen('include()');
    for (const item of items) this.items.push(...resolve(item));
    return this;
  }

  /**
   * Default workers: a pool of n. Throws `WORKERS_INVALID` for a bad n, `APP_STATE` once mounted (as every setting
   * method does).
   */
  workers(n: number): this {
    return this.set({ workers: n, byKey: false });
  }
  /** Default lanes by key: n of them. */
  workersByKey(n: number): this {
    return this.set({ workers: n, byKey: true });
  }
  /** Default consumer group. */
  group(group: string): this {
    return this.set({ group });
  }
  /** Default retry policy; a subscriber's own `retry` merges over it field by field. */
  retry(retry: RetryOptions): this {
    return this.set({ retry });
  }
  /** Default dead-letter topic, one for all that it includes, or `false` to drop. */
  deadLetter(topic: string | false): this {
    return this.set({ deadLetter: topic });
  }
  /** Default attempt timeout, in milliseconds. */
  timeout(ms: number): this {
    return this.set({ timeoutMs: ms });
  }
  /** The default decoder: a function of the raw bytes, or an object with `parse` (a zod schema fits). */
  decode(decoder: Decoder): this {
    return this.set({ decode: decoder });
  }
  /**
   * Adds a middleware around each attempt of every subscriber included (before or after this call), inside
   * the app's and outer routers' middlewares, outside inner routers' and the subscribers' own; in the order
   * added, the first outermost. See {@link Middleware}.
   */
  use(middleware: Middleware): this {
    return this.set({ use: [...(this.settings.use ?? []), middleware] });
  }

  /**
   * @internal Every subscriber below this router, with the layers of defaults above it. `app` names the
   * app that mounts them: from then on this router (and every router in it) refuses changes.
   */
  mounted(app?: string): Mounted[] {
    if (app !== undefined) this.mountedBy ??= app;
    const { prefix = '', use = [], ...defaults } = this.settings;
    return this.items.flatMap((item) =>
      item instanceof Router
        ? item.mounted(app).map((m) => ({
            spec: m.spec,
            prefix: prefix + m.prefix,
            layers: [...m.layers, defaults],
            middlewares: [...use, ...(m.middlewares ?? [])],
          }))
        : [{ spec: item, prefix, layers: [defaults], middlewares: use }],
    );
  }

  private set(patch: RouterOptions): this {
    this.assertOpen('a setting');
    this.settings = parseRouterOptions({ ...this.settings, ...patch });
    return this;
  }

  private assertOpen(what: string): void {
    if (this.mountedBy === undefined) return;
    const { prefix } = this.settings;
    throw new SluiceError(
      'APP_STATE',
      `router${prefix ? ` "${prefix}"` : ''}: ${what} after App "${this.mountedBy}" mounted it with withBroker() would be ignored; include everything inside withBroker's callback`,
    );
  }
}

/** Turns anything `include` takes into specs and routers; throws on anything else. */
export function resolve(item: unknown): (SubscriberSpec | Router)[] {
  if (item instanceof SubscriberSpec || item instanceof Router) return [item];
  if (item instanceof TopicBuilder)
    throw new SluiceError('CONFIG_INVALID', 'include: a subscriber without a handler; end its chain with .handle(...)');
  if (item !== null && (typeof item === 'function' || typeof item === 'object') && hasSubscribers(item))
    return specsOf(item);
  if (item instanceof SubscriberBuilder) return [item.build()];
  throw new SluiceError(
    'CONFIG_INVALID',
    `include: expected a subscriber spec, a router, or a class with @subscriber methods (or an instance of one), got ${show(item)}`,
  );
}
