import type { Handler, SubscriberOptions } from './options.js';

/**
 * One subscriber, as declared: topic, handler and the settings given explicitly (router and app
 * defaults fill the rest at mount). Immutable; made by `subscriber(...).build()` or by the decorator.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- so a handler's own payload type is taken as is
export class SubscriberSpec<T = any> {
  constructor(
    readonly topic: string,
    readonly handler: Handler<T>,
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
