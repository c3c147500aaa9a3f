import type { Handler, SubscriberOptions } from './options.js';

/**
 * One subscriber, as declared: topic, handler and the settings given explicitly (router and app
 * defaults fill the rest at mount). Immutable; made by `subscriber(...).build()` or by the decorator.
 *
 * @category Subscribers
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- so a handler's own payload type is taken as is
export class SubscriberSpec<T = any> {
  /** @internal Made by {@link SubscriberBuilder.build} and by the decorator. */
  constructor(
    /** The topic, without the prefixes of the routers it will be included through. */
    readonly topic: string,
    /** The handler (a decorated method bound to its instance). */
    readonly handler: Handler<T>,
    /** The settings given explicitly, checked and frozen. */
    readonly options: Readonly<SubscriberOptions<T>>,
    /** The default name: `Class.method`, or the handler's name. */
    readonly defaultName: string,
  ) {
    Object.freeze(this);
  }

  /** The name in the app: the `name` setting, or the default. */
  get name(): string {
    return this.options.name ?? this.defaultName;
  }
}
