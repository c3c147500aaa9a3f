import { pk } from './client.js';

/** When each client consumer's group coordinator last heard it: the time the request it answered was begun. */
const heard = new WeakMap<object, number>();
/** When each traced request was begun, by its tracing context. */
const begun = new WeakMap<object, number>();
let listening = false;

/** The requests whose answer says the coordinator counts the member in the group (its session goes on). */
const KEEPS_SESSION = new Set(['heartbeat', 'consumerGroupHeartbeat', 'joinGroup']);

/**
 * Starts noting when the coordinator heard each client consumer, from the client's tracing channels (a
 * heartbeat, or a classic join, answered without error), before the first consumer that asks
 * ({@link heardAt}) sends anything.
 *
 * The time noted is when the request was begun, not when its answer was read: an answer given before the
 * process was frozen (SIGSTOP, a long pause) and read after it thawed says nothing of the time in between. The
 * client's own `lastHeartbeat` is the time the answer was read.
 */
export function noteHeard(): void {
  if (listening) return;
  listening = true;
  const of = (context: unknown) => context as { client?: object; operation?: string; error?: unknown };
  for (const channel of [pk.consumerHeartbeatChannel, pk.consumerGroupChannel]) {
    channel.start.subscribe((context) => {
      const c = of(context);
      if (c.client !== undefined && KEEPS_SESSION.has(c.operation ?? '')) begun.set(c, Date.now());
    });
    channel.asyncEnd.subscribe((context) => {
      const c = of(context);
      const at = begun.get(c);
      if (c.client === undefined || at === undefined || c.error !== undefined) return;
      heard.set(c.client, Math.max(heard.get(c.client) ?? 0, at));
    });
  }
}

/** When the coordinator last heard `consumer` (epoch milliseconds; 0 when never). */
export function heardAt(consumer: object | undefined): number {
  return consumer === undefined ? 0 : (heard.get(consumer) ?? 0);
}
