/** What a handler decided about a delivery. Returning nothing is the same as {@link HandlerOutcome.ack}. */
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

  /** Deliver again after `delayMs` (default: the subscriber's backoff); counts an attempt. */
  static retry(options: { delayMs?: number } = {}): HandlerOutcome {
    const d = options.delayMs;
    if (d !== undefined && !(Number.isFinite(d) && d >= 0)) throw new RangeError(`HandlerOutcome.retry: delayMs must be a finite number >= 0, got ${d}`);
    return new HandlerOutcome('retry', d, undefined);
  }

  /** Never again: to the dead-letter topic (or dropped where `deadLetter: false`). */
  static reject(reason?: string): HandlerOutcome {
    return new HandlerOutcome('reject', undefined, reason ?? 'rejected by handler');
  }
}
