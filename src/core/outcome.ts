/**
 * What a handler decided about a delivery: made by {@link HandlerOutcome.ack}, {@link HandlerOutcome.retry}
 * and {@link HandlerOutcome.reject}. Returning nothing is the same as `ack()`; throwing is a retry (a
 * dead letter after the last attempt).
 *
 * @example
 * ```ts
 * subscriber('orders', async (order: Order) => {
 *   if (!order.id) return HandlerOutcome.reject('order without id'); // to orders.dlq at once
 *   if (await provider.busy()) return HandlerOutcome.retry({ delayMs: 5_000 });
 *   await charge(order);
 *   return HandlerOutcome.ack();
 * });
 * ```
 *
 * @category Subscribers
 */
export class HandlerOutcome {
  private static readonly ACK = Object.freeze(new HandlerOutcome('ack', undefined, undefined));

  private constructor(
    /** `ack`: done. `retry`: deliver again later. `reject`: never again, dead-letter it. */
    readonly kind: 'ack' | 'retry' | 'reject',
    /** For `retry`: the delay before the next attempt, overriding the backoff. */
    readonly delayMs: number | undefined,
    /** For `reject`: why, carried in the dead letter's `x-sluice-error` header. */
    readonly reason: string | undefined,
  ) {}

  /** Done: the delivery is settled and its offset becomes committable. */
  static ack(): HandlerOutcome {
    return HandlerOutcome.ACK;
  }

  /**
   * Deliver again after `delayMs` milliseconds (default: the subscriber's backoff); counts an attempt,
   * and after the last one the delivery is dead-lettered. The worker is free meanwhile.
   *
   * @throws RangeError when `delayMs` is not a finite number >= 0.
   */
  static retry(options: { delayMs?: number } = {}): HandlerOutcome {
    const d = options.delayMs;
    if (d !== undefined && !(Number.isFinite(d) && d >= 0))
      throw new RangeError(`HandlerOutcome.retry: delayMs must be a finite number >= 0, got ${d}`);
    return new HandlerOutcome('retry', d, undefined);
  }

  /**
   * Never again: to the dead-letter topic (or dropped where `deadLetter: false`), with `reason` (default
   * `rejected by handler`) in its `x-sluice-error` header. Not retried, whatever attempts are left.
   */
  static reject(reason?: string): HandlerOutcome {
    return new HandlerOutcome('reject', undefined, reason ?? 'rejected by handler');
  }
}
