import type { Context, RunInfo } from '../core/context.js';
import { messageId, type Headers, type InboundMessage, type MessageInfo } from '../core/message.js';
import type { Logger } from '../core/ports.js';
import type { Job } from './job.js';

/** What a context needs from the subscription that made it. */
export interface ContextHost {
  readonly log: Logger;
  /** Aborted when shutdown's time ran out. */
  readonly shutdownSignal: AbortSignal;
  publish(topic: string, value: unknown, options?: { key?: string; headers?: Headers }): Promise<void>;
}

function info(m: InboundMessage, attempt: number): MessageInfo {
  return { topic: m.topic, key: m.key, headers: m.headers, partition: m.partition, offset: m.offset, id: messageId(m), timestamp: m.timestamp, attempt };
}

/**
 * The context of one attempt. Cheap to make: what a handler does not read (message info, the signal)
 * is built on first access.
 */
export class DeliveryContext implements Context {
  private controller: AbortController | undefined;
  readonly run: RunInfo | undefined = undefined;

  constructor(
    private readonly job: Job,
    private readonly host: ContextHost,
  ) {}

  get message(): MessageInfo {
    return info(this.job.message, this.job.attempt);
  }

  get messages(): readonly MessageInfo[] {
    return (this.job.batch ?? [this.job.message]).map((m) => info(m, this.job.attempt));
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

  /** Aborts `ctx.signal` (the attempt's time ran out). A handler that never read the signal is unaffected. */
  abort(reason: unknown): void {
    this.controller?.abort(reason);
  }

  publish(topic: string, value: unknown, options?: { key?: string; headers?: Headers }): Promise<void> {
    return this.host.publish(topic, value, options);
  }
}
