import type { Context } from './context.js';
import type { PublishOptions } from './message.js';
import type { HandlerOutcome } from './outcome.js';

/**
 * What a middleware sees of one attempt: the handler's own {@link Context} (the same object the handler gets,
 * so what a middleware puts on `ctx.state` the handler reads), and the attempt itself. For telemetry:
 * `ctx.subscriber`, `ctx.message` (topic, partition, offset, key, headers), `ctx.messages` (a batch's),
 * `ctx.run` (a paced run's ID, key and size), `ctx.attempt` of `ctx.attempts`, and the outcome `next()` gives.
 *
 * @typeParam T - the payload the subscriber's handler takes (`unknown` for app and router middlewares).
 * @category Middlewares
 */
export interface MiddlewareContext<T = unknown> extends Context {
  /** The subscriber's name, unique in the app. */
  readonly subscriber: string;
  /** What the handler gets: the decoded payload, a batch's payloads, or a paced run's event(s). */
  readonly payload: T;
  /** 1 on the first attempt, 2 on the first retry, and so on (as `ctx.message.attempt`). */
  readonly attempt: number;
  /** Attempts in all that the subscriber's retry policy allows: `attempt === attempts` is the last one. */
  readonly attempts: number;
}

/**
 * Runs what is inside the middleware (the next middleware, at last the handler) and resolves with the outcome:
 * the handler's {@link HandlerOutcome} (`ack()` when it returned nothing). What the handler (or an inner
 * middleware) throws, it rejects with. Called a second time, it rejects with {@link SluiceError}
 * `MIDDLEWARE_NEXT_TWICE` and runs nothing.
 *
 * @category Middlewares
 */
export type Next = () => Promise<HandlerOutcome>;

/**
 * A handler middleware: wraps every attempt of the subscribers it applies to (an app's: all of them; a
 * router's: what it includes; a subscriber's own: that one). It returns the attempt's outcome: what `next()`
 * gave, another one (mapping a thrown error to `retry`, say), or one of its own without calling `next()` (a
 * short-circuit: the handler does not run). Returning nothing keeps what `next()` gave, or acks when `next()`
 * was not called; returning anything else but a {@link HandlerOutcome} fails the attempt (`OUTCOME_INVALID`).
 * A middleware that throws is a handler that throws: retried, then dead-lettered, as the subscriber's retry
 * policy says.
 *
 * Order, outermost first: the app's (`app.use`, in the order added), then each router's from the outermost
 * in, then the subscriber's own (`.use`, `{ use }`), then the handler.
 *
 * @example
 * ```ts
 * app.use(async (ctx, next) => {
 *   const t0 = performance.now();
 *   const outcome = await next();
 *   ctx.log.info('handled', { subscriber: ctx.subscriber, outcome: outcome.kind, ms: performance.now() - t0 });
 *   return outcome;
 * });
 * ```
 *
 * @typeParam T - the payload the subscriber's handler takes; an app's or a router's middleware takes `unknown`.
 * @category Middlewares
 */
export type Middleware<T = unknown> = (
  ctx: MiddlewareContext<T>,
  next: Next,
) => HandlerOutcome | void | undefined | Promise<HandlerOutcome | void | undefined>;

/**
 * A message on its way to the broker, as a publish middleware sees it and passes it on: the topic, the value
 * (as `ctx.publish` was given it) and the {@link PublishOptions}.
 *
 * @category Middlewares
 */
export interface OutgoingMessage extends PublishOptions {
  /** Where it goes. */
  readonly topic: string;
  /** The value: bytes and strings go as they are, anything else as JSON (ignored for a tombstone). */
  readonly value: unknown;
}

/**
 * What a publish middleware is told about a publish besides the message.
 *
 * @category Middlewares
 */
export interface PublishInfo {
  /**
   * `publish`: a handler's `ctx.publish` (and what a subscriber's `publishTo` and `replies` publish);
   * `dead-letter`: a dead letter (each try of it, the stripped one too); `publisher`: the app's own
   * (`app.publisher(...).publish`, `app.request`).
   */
  readonly kind: 'publish' | 'dead-letter' | 'publisher';
  /** The subscriber that publishes; for `publisher`, the app's name. */
  readonly subscriber: string;
  /**
   * The handler's context of the work the message comes from (`ctx.publish`'s, or the dead-lettered work's);
   * `undefined` for the dead letter of a message that did not decode (no handler saw it).
   */
  readonly context: Context | undefined;
}

/**
 * A publish middleware (`app.usePublish`): wraps every publish of the app's subscribers, `ctx.publish` and
 * dead letters alike, in the order added (the first added outermost). It passes the message on, changed or
 * not, with `next(message)`, which resolves once the broker has it; not calling `next` publishes nothing.
 * Calling it twice rejects with {@link SluiceError} `MIDDLEWARE_NEXT_TWICE`. A throw is the publish's failure
 * (a handler's `ctx.publish` rejects; a dead letter's publish is tried again).
 *
 * @example
 * ```ts
 * app.usePublish((message, next) => next({ ...message, headers: { ...message.headers, 'x-origin': 'billing' } }));
 * ```
 *
 * @category Middlewares
 */
export type PublishMiddleware = (
  message: OutgoingMessage,
  next: (message: OutgoingMessage) => Promise<void>,
  info: PublishInfo,
) => Promise<void>;

/**
 * A lifecycle hook: `app.onStartup`, `afterStartup`, `onShutdown`, `afterShutdown`. Awaited, one after the
 * other, in the order added.
 *
 * @category App
 */
export type LifecycleHook = () => void | Promise<void>;
