import type { MessageInfo, PublishOptions } from './message.js';
import type { Logger } from './ports.js';

/**
 * A paced run, as a handler of a paced subscriber sees it: `ctx.run` (see {@link PaceOptions}).
 *
 * @category Pace
 */
export interface RunInfo {
  /** `<key>@<uuid>`, fixed when the window opened. */
  readonly id: string;
  /**
   * The key whose coordinator made the run: the one `app.send` was given, or a delivery's (the
   * subscriber's `key` function's, else the message key; `''` for keyless deliveries).
   */
  readonly key: string;
  /** How many events the run carries (for `debounce`, how many starts it collapsed). */
  readonly size: number;
  /**
   * When the run started (ms since the epoch): its window closed and its rate let it go. Fixed across retries and
   * restarts.
   */
  readonly startedAt: number;
}

/**
 * What middlewares leave on `ctx.state` for the handler (and for the middlewares inside them): one bag per
 * delivery, batch or run, kept across its attempts. Read it with a check or a cast: `ctx.state.user as User`.
 *
 * @category Middlewares
 */
export interface ContextState {
  [name: string]: unknown;
}

/**
 * What a handler gets besides its payload: its second argument.
 *
 * @example
 * ```ts
 * subscriber('orders', async (order: Order, ctx: Context) => {
 *   ctx.log.info('charging', { id: ctx.message.id, attempt: ctx.message.attempt });
 *   await charge(order, { signal: ctx.signal });
 *   await ctx.publish('receipts', { orderId: order.id }, { key: ctx.message.key });
 * });
 * ```
 *
 * @category Subscribers
 */
export interface Context {
  /** The message being handled (for a batch handler: the first of the batch). */
  readonly message: MessageInfo;
  /** For a batch handler: every message of the batch, in order; otherwise `[ctx.message]`. */
  readonly messages: readonly MessageInfo[];
  /** The run, for paced subscribers; `undefined` otherwise. */
  readonly run: RunInfo | undefined;
  /**
   * Aborted when the handler's time runs out: its attempt ran past `timeoutMs`, or shutdown's
   * `shutdownTimeoutMs` ran out. Pass it to `fetch` and the like.
   */
  readonly signal: AbortSignal;
  /**
   * What middlewares put here for the handler: one bag per delivery, batch or run, kept across its attempts
   * (empty without middlewares). See {@link Middleware}.
   */
  readonly state: ContextState;
  /** The app's logger, with `app`, `subscriber` and `topic` bound. */
  readonly log: Logger;
  /**
   * Publishes on the subscriber's broker. A `Uint8Array` is sent as it is, a string as UTF-8 text,
   * anything else as JSON; `{ tombstone: true }` sends no value. Resolves once the broker has the message.
   *
   * @throws {@link SluiceError} `PUBLISH_REFUSED` (as a rejection) when the broker refuses the message for
   *   good (too large, invalid); other rejections may pass on a later try.
   */
  publish(topic: string, value: unknown, options?: PublishOptions): Promise<void>;
}
