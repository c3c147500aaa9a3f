import type { InboundMessage } from '../core/message.js';
import type { Watermark } from '../dispatch/watermark.js';

/**
 * One unit of work for a worker: a delivery, or a batch of them. It carries its attempt count and the
 * watermark of each message's partition, so that its settlement is counted where it belongs.
 */
export class Job {
  attempt = 1;
  /** The partition key the job is dispatched by (the key function's, or the message's). */
  key: string | undefined = undefined;
  payload: unknown = undefined;
  /** Set once the payload was decoded (the key function may need it before a worker does). */
  decoded = false;
  /** Messages that did not decode, each with its reason; they go to the dead-letter topic. */
  undecodable: [InboundMessage, string][] | undefined = undefined;
  /** The context of the attempt running now: aborted when the attempt's time runs out. */
  ctx: { abort(reason: unknown): void } | undefined = undefined;

  constructor(
    /** The delivery, or the first of the batch. */
    readonly message: InboundMessage,
    readonly marks: Watermark,
    /** For batch handlers: every message of the batch, and each one's watermark. */
    readonly batch?: readonly InboundMessage[],
    readonly batchMarks?: readonly Watermark[],
  ) {}

  /** True when every partition the job reads from was taken away: its result would count nowhere. */
  revoked(): boolean {
    if (!this.batchMarks) return this.marks.revoked;
    for (const m of this.batchMarks) if (!m.revoked) return false;
    return true;
  }
}
