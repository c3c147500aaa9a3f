import type { MiddlewareContext } from '../core/middleware.js';
import type { InboundMessage } from '../core/message.js';
import type { StagedMessage } from '../core/transactions.js';
import type { Watermark } from '../dispatch/watermark.js';
import type { PaceRun } from '../pace/rules.js';

/**
 * What flows through a subscription, one way: Intake makes it (decoded, keyed), Dispatch runs its handler,
 * the Ledger applies the outcome. One of three kinds:
 *
 * - a `Delivery`: one broker message, decoded; its offset becomes committable once its outcome is applied;
 * - a `Batch`: broker messages handed to a batch handler together (the payloads that decoded);
 * - a `Run`: a paced run that left its coordinator; it has no offset, and its end is recorded as `done`.
 */
export type Work = Delivery | Batch | Run;

/** Where tracing keeps the span of a handler context's last attempt (see `AppTracing`). */
export const ATTEMPT_SPAN: unique symbol = Symbol('sluice.attemptSpan');

/**
 * The handler's `ctx` for a piece of work (what its middlewares see too), and what the pipeline does with it
 * between attempts.
 */
export interface WorkContext extends MiddlewareContext {
  /** The span of its last attempt, when the app has tracing: what it publishes and dead-letters is its child. */
  [ATTEMPT_SPAN]: unknown;
  /** A new attempt begins: it gets a signal of its own. */
  beginAttempt(): void;
  /** Aborts the current attempt's `signal` (its time ran out). */
  abort(reason: unknown): void;
  /** Under exactly-once: what the attempt published, for its transaction; later publishes are refused. */
  takeStaged(): readonly StagedMessage[] | undefined;
}

/** A message that did not decode, with why: it goes to the dead-letter topic. */
export interface Undecodable {
  readonly message: InboundMessage;
  readonly reason: string;
}

/** The part every kind of work shares: what the workers' scheduler reads, and the attempt under way. */
interface Attempted {
  /** The partition key the work is dispatched by (the key function's, or the message's). */
  readonly key: string | undefined;
  /** A paced run's order among the runs waiting for a worker (`pace.order`); 0 otherwise. */
  readonly order: number;
  /** 1 on the first attempt, counting up with each retry. */
  attempt: number;
  /** The handler's `ctx`, made on the first attempt and kept across retries (the watchdog aborts its signal). */
  context: WorkContext | undefined;
}

export interface Delivery extends Attempted {
  readonly kind: 'delivery';
  readonly message: InboundMessage;
  readonly payload: unknown;
  /** Its partition's watermark, where its offset is recorded. */
  readonly marks: Watermark;
}

export interface Batch extends Attempted {
  readonly kind: 'batch';
  /** Every message of the batch, those that did not decode included (`ctx.messages`). */
  readonly messages: readonly InboundMessage[];
  /** Each message's partition watermark, in the same order. */
  readonly marks: readonly Watermark[];
  /** The payloads that decoded, in order: what the handler gets. */
  readonly payload: readonly unknown[];
  /** The messages that did not decode: dead-lettered with the first outcome, then cleared. */
  undecodable: readonly Undecodable[];
}

export interface Run extends Attempted {
  readonly kind: 'run';
  readonly run: PaceRun;
  /** The run's events as its handler gets them: all of them (batch), or the one (debounce, a plain start). */
  readonly payload: unknown;
  readonly topic: string;
  /** When the run reached its subscription: `ctx.message.timestamp`. */
  readonly arrivedAt: number;
  readonly key: string;
  /** False once the run is no longer this instance's (its shard handed over): it is not started or retried. */
  readonly held: () => boolean;
}

/** The watermarks a delivery or a batch is counted in; none for a run. */
export function watermarksOf(work: Work): readonly Watermark[] {
  switch (work.kind) {
    case 'delivery':
      return [work.marks];
    case 'batch':
      return work.marks;
    case 'run':
      return [];
  }
}

/**
 * True when every partition the work reads from was taken away: its result would count nowhere. A run
 * belongs to no partition: it is never revoked.
 */
export function isRevoked(work: Work): boolean {
  if (work.kind === 'delivery') return work.marks.revoked;
  if (work.kind === 'run') return !work.held();
  return work.marks.every((m) => m.revoked);
}
