/**
 * Middlewares composed once, when a subscription is made: a handler's chain around each attempt, a publish
 * chain around each publish. With none registered there is no chain at all (`undefined`, and the broker's own
 * publish): the executor calls the handler as it always did, and nothing is allocated per message.
 */
import { SluiceError, show } from '../core/errors.js';
import type { PublishOptions } from '../core/message.js';
import type {
  Middleware,
  MiddlewareContext,
  OutgoingMessage,
  PublishInfo,
  PublishMiddleware,
} from '../core/middleware.js';
import { HandlerOutcome } from '../core/outcome.js';
import type { Broker } from '../core/ports.js';

/** One attempt under middlewares: resolves with its outcome, rejects with what was thrown. */
export type Chain = (ctx: MiddlewareContext) => Promise<HandlerOutcome>;

/** A publish under publish middlewares; `context` is the handler's it comes from, if any. */
export type Publish = (
  topic: string,
  value: unknown,
  options?: PublishOptions,
  context?: PublishInfo['context'],
) => Promise<void>;

/** `middleware #2 (timing)`: the position, from 1, outermost first, and the function's name when it has one. */
function nameOf(kind: string, fn: { name: string }, index: number): string {
  return `${kind} #${index + 1}${fn.name ? ` (${fn.name})` : ''}`;
}

const ignore = (): void => {};

function twice(who: string): SluiceError {
  return new SluiceError('MIDDLEWARE_NEXT_TWICE', `${who} called next() a second time; it runs what is inside once`);
}

/** What a handler returned, as an outcome: nothing is `ack()`; anything but a `HandlerOutcome` is refused. */
function handlerOutcome(value: unknown): HandlerOutcome {
  if (value === undefined || value === null) return HandlerOutcome.ack();
  if (value instanceof HandlerOutcome) return value;
  throw new SluiceError('OUTCOME_INVALID', `handler returned ${show(value)}, not a HandlerOutcome`);
}

/**
 * Composes `middlewares` (outermost first) around `handler`, which calls the handler with the context and
 * returns what it returned; undefined when there are none.
 */
export function composeAttempt(
  middlewares: readonly Middleware[],
  handler: (ctx: MiddlewareContext) => unknown,
): Chain | undefined {
  if (middlewares.length === 0) return undefined;
  const names = middlewares.map((m, i) => nameOf('middleware', m, i));
  const step = async (i: number, ctx: MiddlewareContext): Promise<HandlerOutcome> => {
    if (i === middlewares.length) return handlerOutcome(await handler(ctx));
    let inner: Promise<HandlerOutcome> | undefined;
    const next = (): Promise<HandlerOutcome> => {
      if (inner !== undefined) return Promise.reject(twice(names[i]!));
      inner = step(i + 1, ctx);
      inner.catch(ignore); // a middleware that does not wait for it must not leave a rejection unhandled
      return inner;
    };
    const result: unknown = await middlewares[i]!(ctx, next);
    if (result instanceof HandlerOutcome) return result;
    if (result !== undefined)
      throw new SluiceError('OUTCOME_INVALID', `${names[i]!} returned ${show(result)}, not a HandlerOutcome`);
    // Nothing returned: what next() gave (its rejection included), or ack for a middleware that did not call it.
    return inner ?? HandlerOutcome.ack();
  };
  return (ctx) => step(0, ctx);
}

/** A publish from a handler's context (or from none: a dead letter of a message no handler saw). */
export type PublishFrom = (
  context: PublishInfo['context'],
  topic: string,
  value: unknown,
  options?: PublishOptions,
) => Promise<void>;

/** Composes publish middlewares (outermost first) around `publish`, for one subscriber. */
export function composePublish(
  middlewares: readonly PublishMiddleware[],
  publish: Publish,
  info: Omit<PublishInfo, 'context'>,
): PublishFrom {
  if (middlewares.length === 0) return (context, topic, value, options) => publish(topic, value, options, context);
  const names = middlewares.map((m, i) => nameOf('publish middleware', m, i));
  const step = async (i: number, message: OutgoingMessage, about: PublishInfo): Promise<void> => {
    if (i === middlewares.length) {
      const { topic, value, ...options } = message;
      return publish(topic, value, options, about.context);
    }
    let called = false;
    const next = (m: OutgoingMessage): Promise<void> => {
      if (called) return Promise.reject(twice(names[i]!));
      called = true;
      if (m === null || typeof m !== 'object' || typeof m.topic !== 'string')
        return Promise.reject(
          new SluiceError('CONFIG_INVALID', `${names[i]!}: next() takes a message with a topic, got ${show(m)}`),
        );
      return step(i + 1, m, about);
    };
    await middlewares[i]!(message, next, about);
  };
  return (context, topic, value, options) => step(0, { ...options, topic, value }, { ...info, context });
}

/**
 * A subscriber's two publishes through the publish middlewares: its handlers' `ctx.publish`, its dead letters.
 * `handled`, when given, takes a handler's publishes instead of the broker (exactly-once holds them).
 */
export function publishersOf(
  middlewares: readonly PublishMiddleware[],
  broker: Pick<Broker, 'publish'>,
  subscriber: string,
  handled?: Publish,
): { publish: PublishFrom; deadLetter: PublishFrom } {
  // Looked up at each publish, as before middlewares: the broker's own `publish` at the time.
  const publish: Publish = (topic, value, options) => broker.publish(topic, value, options);
  return {
    publish: composePublish(middlewares, handled ?? publish, { kind: 'publish', subscriber }),
    deadLetter: composePublish(middlewares, publish, { kind: 'dead-letter', subscriber }),
  };
}
