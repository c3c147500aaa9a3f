import { SluiceError, show } from '../core/errors.js';
import { SubscriberBuilder } from './builder.js';
import { hasSubscribers, specsOf } from './decorators.js';
import { SHARED_OPTION_NAMES, type Decoder, type RetryOptions, type SharedOptions } from './options.js';
import { SubscriberSpec } from './spec.js';
import { validateOptions } from './validate.js';

/**
 * Settings of a {@link Router}: a topic prefix and defaults for what it includes. Any other option
 * (`name`, `key`, `batch`, `pace`) throws {@link SluiceError} `CONFIG_INVALID`.
 *
 * @category Subscribers
 */
export interface RouterOptions extends SharedOptions {
  /** Prepended to every topic included (nested routers' prefixes concatenate). @default '' */
  prefix?: string;
}

/**
 * What `include` takes: a spec, a builder (built at `include`), a router, a decorated class or an instance of one.
 *
 * @category Subscribers
 */
export type Includable =
  SubscriberSpec | SubscriberBuilder | Router | (abstract new (...args: never[]) => object) | object;

/** A subscriber with the router layers it was included through, outermost last. */
export interface Mounted {
  readonly spec: SubscriberSpec;
  readonly prefix: string;
  /** Defaults from the innermost router outwards. */
  readonly layers: readonly SharedOptions[];
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
    this.settings = Router.check(options);
  }

  /**
   * Adds subscribers: specs, builders (built here), routers, decorated classes (made with `new`, no
   * arguments) or instances of one. Chainable.
   *
   * @throws {@link SluiceError} `CONFIG_INVALID` for anything else; `APP_STATE` once an app mounted the
   *   router.
   */
  include(...items: Includable[]): this {
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
   * @internal Every subscriber below this router, with the layers of defaults above it. `app` names the
   * app that mounts them: from then on this router (and every router in it) refuses changes.
   */
  mounted(app?: string): Mounted[] {
    if (app !== undefined) this.mountedBy ??= app;
    const { prefix = '', ...defaults } = this.settings;
    return this.items.flatMap((item) =>
      item instanceof Router
        ? item.mounted(app).map((m) => ({ spec: m.spec, prefix: prefix + m.prefix, layers: [...m.layers, defaults] }))
        : [{ spec: item, prefix, layers: [defaults] }],
    );
  }

  private set(patch: RouterOptions): this {
    this.assertOpen('a setting');
    this.settings = Router.check({ ...this.settings, ...patch });
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

  private static check(options: RouterOptions): Readonly<RouterOptions> {
    const { prefix, ...rest } = options ?? {};
    const who = `router${prefix ? ` "${prefix}"` : ''}`;
    if (prefix !== undefined && typeof prefix !== 'string')
      throw new SluiceError('CONFIG_INVALID', `${who}: prefix must be a string, got ${show(prefix)}`);
    for (const field of Object.keys(rest)) {
      if (!(SHARED_OPTION_NAMES as readonly string[]).includes(field)) {
        throw new SluiceError(
          'CONFIG_INVALID',
          `${who}: ${field} is not a router setting (prefix, ${SHARED_OPTION_NAMES.join(', ')}), got ${show((rest as Record<string, unknown>)[field])}`,
        );
      }
    }
    return Object.freeze({ ...validateOptions(rest, who), ...(prefix !== undefined ? { prefix } : {}) });
  }
}

/** Turns anything `include` takes into specs and routers; throws on anything else. */
export function resolve(item: Includable): (SubscriberSpec | Router)[] {
  if (item instanceof SubscriberSpec || item instanceof Router) return [item];
  if (item !== null && (typeof item === 'function' || typeof item === 'object') && hasSubscribers(item))
    return specsOf(item);
  if (item instanceof SubscriberBuilder) return [item.build()];
  throw new SluiceError(
    'CONFIG_INVALID',
    `include: expected a subscriber spec, a router, or a class with @subscriber methods (or an instance of one), got ${show(item)}`,
  );
}
