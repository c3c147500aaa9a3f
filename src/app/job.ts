import type { Context, RunInfo } from '../core/context.js';
import { messageId, rawOf, type InboundMessage, type MessageInfo, type PublishOptions } from '../core/message.js';
import type { Logger } from '../core/ports.js';
import type { Watermark } from '../dispatch/watermark.js';
import type { PaceRun } from '../pace/rules.js';

/** What a job needs from the subscription that made it, to serve as the handler's context. */
export interface ContextHost {
  readonly log: Logger;
  /** Aborted when shutdown's time ran out. */
  readonly shutdownSignal: AbortSignal;
  publish(topic: string, value: unknown, options?: PublishOptions): Promise<void>;
}

function info(m: InboundMessage, attempt: number): MessageInfo {
  return {
    topic: m.topic,
    key: m.key,
    headers: m.headers,
    partition: m.partition,
    offset: m.offset,
    id: messageId(m),
    timestamp: m.timestamp,
    attempt,
    get raw() {
      return rawOf(m);
    },
  };
}

/**
 * One unit of work for a worker — a delivery, or a batch of them — and the handler's `ctx` for it: one
 * object per delivery, whose parts a handler does not read (message info, the signal) are built on first
 * access. It carries its attempt count and each message's partition watermark, so that its settlement is
 * counted where it belongs.
 */
export class Job implements Context {
  attempt = 1;
  /** The partition key the job is dispatched by (the key function's, or the message's). */
  key: string | undefined = undefined;
  payload: unknown = undefined;
  /** A paced run's order among the runs waiting for a worker (`pace.order`); 0 otherwise. */
  order = 0;
  /** Set once the payload was decoded (the key function may need it before a worker does). */
  decoded = false;
  /** Messages that did not decode, each with its reason; they go to the dead-letter topic. */
  undecodable: [InboundMessage, string][] | undefined = undefined;
  /** For a paced run: what `ctx.run` shows. */
  readonly run: RunInfo | undefined;
  /** The current attempt's signal source, made when a handler first reads `signal`. */
  private controller: AbortController | undefined = undefined;

  constructor(
    private readonly host: ContextHost,
    /** The delivery, or the first of the batch. */
    readonly delivery: InboundMessage,
    readonly marks: Watermark,
    /** For batch handlers: every message of the batch, and each one's watermark. */
    readonly batch?: readonly InboundMessage[],
    readonly batchMarks?: readonly Watermark[],
    /** A paced run instead of a delivery: its `done` is recorded when it settles. */
    readonly paced?: PaceRun,
  ) {
    this.run = paced && { id: paced.id, key: paced.key, size: paced.size, startedAt: paced.startedAt };
  }

  /** True when every partition the job reads from was taken away: its result would count nowhere. */
  revoked(): boolean {
    if (!this.batchMarks) return this.marks.revoked;
    for (const m of this.batchMarks) if (!m.revoked) return false;
    return true;
  }

  /** A new attempt begins: it gets a signal of its own. */
  beginAttempt(): void {
    this.controller = undefined;
  }

  /** Aborts the current attempt's `signal` (its time ran out). A handler that never read it is unaffected. */
  abort(reason: unknown): void {
    this.controller?.abort(reason);
  }

  // Context, as the handler sees it.

  get message(): MessageInfo {
    return info(this.delivery, this.attempt);
  }

  get messages(): readonly MessageInfo[] {
    return (this.batch ?? [this.delivery]).map((m) => info(m, this.attempt));
  }

  get log(): Logger {
    return this.host.log;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.host.shutdownSignal.aborted) this.controller.abort(this.host.shutdownSignal.reason);
    }
    return this.controller.signal;
  }

  publish(topic: string, value: unknown, options?: PublishOptions): Promise<void> {
    return this.host.publish(topic, value, options);
  }
}
