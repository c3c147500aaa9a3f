import { show } from '../core/errors.js';
import { checkName } from './checks.js';
import type { Handler, SubscriberOptions } from './options.js';
import type { CompiledPace } from './pace.js';
import type { ParsedOptions } from './parse.js';

/**
 * One subscriber, as declared: topic, handler and the settings given explicitly (router and app
 * defaults fill the rest at mount). Immutable; made by `subscriber(...).build()` or by the decorator.
 *
 * @category Subscribers
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- so a handler's own payload type is taken as is
export class SubscriberSpec<T = any> {
  /** The settings given explicitly, checked and frozen. */
  readonly options: Readonly<SubscriberOptions<T>>;
  /** @internal Its `pace`, parsed when it was declared. */
  readonly pace: CompiledPace | undefined;

  /**
   * @internal Made by {@link SubscriberBuilder.build} and by the decorator, from settings parsed there.
   * @throws {@link SluiceError} `CONFIG_INVALID` for a default name that is blank or holds NUL.
   */
  constructor(
    /** The topic, without the prefixes of the routers it will be included through. */
    readonly topic: string,
    /** The handler (a decorated method bound to its instance). */
    readonly handler: Handler<T>,
    parsed: ParsedOptions<T>,
    /** The default name: `Class.method`, or the handler's name. */
    readonly defaultName: string,
  ) {
    this.options = parsed.options;
    this.pace = parsed.pace;
    checkName(`subscriber ${show(this.name)}`, this.name); // a default name (a method's or function's) too
    Object.freeze(this);
  }

  /** The name in the app: the `name` setting, or the default. */
  get name(): string {
    return this.options.name ?? this.defaultName;
  }
}
