import type { Context } from '../core/context.js';
import { HandlerOutcome } from '../core/outcome.js';
import { CORRELATION_HEADER, REPLY_KEY_HEADER, REPLY_TO_HEADER } from '../core/reply-headers.js';
import type { CompiledSubscriber } from '../declare/compile.js';
import type { Handler } from '../declare/options.js';

/**
 * The handler as the executor calls it: the subscriber's own, or, for one that publishes its results
 * (`publishTo`, `replies`), one that publishes what it returned through `ctx.publish` (the publish middlewares
 * and tracing) and returns nothing once the broker has every publish. A publish that fails rejects: the attempt
 * fails, and is retried or dead-lettered. An outcome, `undefined` and `null` publish nothing and are returned as
 * they are. Inside the middlewares and the attempt's timeout, so both see the publishes as part of the attempt.
 */
export function resultHandler(sub: CompiledSubscriber): Handler {
  const { handler, publishTo, replies } = sub;
  if (publishTo.length === 0 && !replies) return handler;
  const publish = (result: unknown, ctx: Context): unknown => {
    if (result === undefined || result === null || result instanceof HandlerOutcome) return result;
    const sends = publishTo.map((t) => ctx.publish(t.name, result, t.outgoing(result)));
    const reply = replies ? replyOf(ctx) : undefined;
    if (reply !== undefined) sends.push(ctx.publish(reply.topic, result, reply.options));
    return sends.length === 1 ? sends[0]!.then(nothing) : Promise.all(sends).then(nothing);
  };
  return (payload, ctx) => {
    const result: unknown = handler(payload, ctx);
    if (!isThenable(result)) return publish(result, ctx) as ReturnType<Handler>;
    return result.then((r) => publish(r, ctx)) as ReturnType<Handler>;
  };
}

/** Where the reply to the request being handled goes, or undefined for a message that is not a request. */
function replyOf(ctx: Context) {
  const headers = ctx.message.headers;
  const topic = headers[REPLY_TO_HEADER];
  const id = headers[CORRELATION_HEADER];
  if (topic === undefined || topic === '' || id === undefined) return undefined;
  const key = headers[REPLY_KEY_HEADER];
  return { topic, options: { ...(key !== undefined ? { key } : {}), headers: { [CORRELATION_HEADER]: id } } };
}

const nothing = (): undefined => undefined;

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === 'function';
}
