import type { ContextState, RunInfo } from '../core/context.js';
import type { MiddlewareContext } from '../core/middleware.js';
import {
  encodeValue,
  messageId,
  rawOf,
  type InboundMessage,
  type MessageInfo,
  type PublishOptions,
} from '../core/message.js';
import { SluiceError, show } from '../core/errors.js';
import type { Logger, StagedMessage } from '../core/ports.js';
import { ATTEMPT_SPAN, type Run, type Work, type WorkContext } from './work.js';

/** The header a paced run's dead letter (and `ctx.message.headers`) carries its run ID in. */
export const RUN_HEADER = 'x-sluice-run-id';

/**
 * What a handler's context may use of its subscription: its name and retry policy's attempts, its logger, the
 * shutdown signal, publishing (through the publish middlewares, told the context it comes from).
 */
export interface ContextPort {
  readonly subscriber: string;
  readonly attempts: number;
  readonly log: Logger;
  /** Aborted when shutdown's time ran out. */
  readonly shutdownSignal: AbortSignal;
  publish(context: HandlerContext, topic: string, value: unknown, options?: PublishOptions): Promise<void>;
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
 * A run as `ctx.message` shows it (and as its dead letter is made): read from no partition (-1, offset -1),
 * its key the run's, its run ID in a header, its bytes the run's payload as JSON, made on first read.
 */
export function runMessage(work: Run): InboundMessage {
  let bytes: Buffer | undefined;
  return {
    topic: work.topic,
    partition: -1,
    offset: -1,
    key: work.run.key,
    headers: { [RUN_HEADER]: work.run.id },
    get value() {
      bytes ??= encodeValue(work.payload);
      return bytes;
    },
    timestamp: work.arrivedAt,
  };
}

/** The message a handler's `ctx.message` describes: the delivery, a batch's first, or the run. */
export function messageOf(work: Work): InboundMessage {
  if (work.kind === 'delivery') return work.message;
  if (work.kind === 'batch') return work.messages[0]!;
  return runMessage(work);
}

/**
 * The handler's `ctx`: a view of one piece of work (made once, kept across its retries) and the few things
 * of the subscription a handler may use. Its parts a handler does not read (message info, the signal) are
 * built on first access.
 */
export class HandlerContext implements WorkContext, MiddlewareContext {
  readonly run: RunInfo | undefined;
  readonly #work: Work;
  /** What middlewares put on `ctx.state`, made on first access. */
  #state: ContextState | undefined = undefined;
  readonly #port: ContextPort;
  /** The current attempt's signal source, made when a handler first reads `signal`. */
  #controller: AbortController | undefined = undefined;
  /** The span of its last attempt, when the app has tracing. */
  [ATTEMPT_SPAN]: unknown = undefined;
  /** Under exactly-once, what the current attempt published, held for its transaction. */
  #staged: StagedMessage[] | undefined = undefined;
  /** Set once the attempt's publishes were taken for its transaction: later ones are refused. */
  #sealed = false;

  constructor(work: Work, port: ContextPort) {
    this.#work = work;
    this.#port = port;
    const run = work.kind === 'run' ? work.run : undefined;
    this.run = run && { id: run.id, key: run.key, size: run.size, startedAt: run.startedAt };
  }

  /** A new attempt begins: it gets a signal of its own. */
  beginAttempt(): void {
    this.#controller = undefined;
    this.#staged = undefined;
    this.#sealed = false;
  }

  /**
   * Under exactly-once, holds a publish of the current attempt for the transaction of its input (dropped if
   * the attempt fails). A publish once the attempt ended (a handler that did not wait for it) is refused.
   */
  stage(message: StagedMessage): Promise<void> {
    if (this.#sealed)
      return Promise.reject(
        new SluiceError(
          'APP_STATE',
          `subscriber ${show(this.#port.subscriber)}: ctx.publish(${show(message.topic)}) after its attempt ended; under exactlyOnce a handler's publishes count only until it returns (await them)`,
        ),
      );
    (this.#staged ??= []).push(message);
    return Promise.resolve();
  }

  takeStaged(): readonly StagedMessage[] | undefined {
    this.#sealed = true;
    return this.#staged;
  }

  /** Aborts the current attempt's `signal`. A handler that never read it is unaffected. */
  abort(reason: unknown): void {
    this.#controller?.abort(reason);
  }

  get message(): MessageInfo {
    return info(messageOf(this.#work), this.#work.attempt);
  }

  get messages(): readonly MessageInfo[] {
    const work = this.#work;
    const messages = work.kind === 'batch' ? work.messages : [messageOf(work)];
    return messages.map((m) => info(m, work.attempt));
  }

  get log(): Logger {
    return this.#port.log;
  }

  get subscriber(): string {
    return this.#port.subscriber;
  }

  get payload(): unknown {
    return this.#work.payload;
  }

  get attempt(): number {
    return this.#work.attempt;
  }

  get attempts(): number {
    return this.#port.attempts;
  }

  get state(): ContextState {
    this.#state ??= {};
    return this.#state;
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      const shutdown = this.#port.shutdownSignal;
      if (shutdown.aborted) this.#controller.abort(shutdown.reason);
    }
    return this.#controller.signal;
  }

  publish(topic: string, value: unknown, options?: PublishOptions): Promise<void> {
    return this.#port.publish(this, topic, value, options);
  }
}
