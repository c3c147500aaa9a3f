import { SluiceError, reasonOf } from '../core/errors.js';
import { messageId } from '../core/message.js';
import { HandlerOutcome } from '../core/outcome.js';
import type { Middleware, MiddlewareContext } from '../core/middleware.js';
import type { Logger } from '../core/ports.js';
import type { JobRunner, Slot } from '../dispatch/workers.js';
import type { CompiledSubscriber } from '../declare/compile.js';
import { HandlerContext, messageOf, type ContextPort } from './handler-context.js';
import type { Handler } from '../declare/options.js';
import { composeAttempt, type Chain } from './middlewares.js';
import { resultHandler } from './results.js';
import { isRevoked, type Run, type Work } from './work.js';

export { STRIPPED_HEADER, type DeadLetterCounts } from './dead-letters.js';

/**
 * What one attempt at a piece of work came to, for the Ledger to apply:
 * - `acked`: the handler finished (returned nothing, or `ack()`);
 * - `failed`: it threw, asked for a retry, returned something else, or timed out: retried while attempts
 *   are left (after `delayMs`, when the handler asked for one), then dead-lettered;
 * - `rejected`: it asked never to run again: dead-lettered at once;
 * - `skipped`: it did not run, the subscription stopping or the work's partitions revoked.
 */
export type Outcome =
  | { readonly kind: 'acked' }
  | {
      readonly kind: 'failed';
      readonly reason: string;
      readonly delayMs?: number | undefined;
      /** Set when the attempt ran past the subscriber's `timeoutMs`. */
      readonly timeout?: true;
      /** What was thrown (for a timeout, `HANDLER_TIMEOUT`; for a bad return value, `OUTCOME_INVALID`), for tracing. */
      readonly error?: unknown;
    }
  | { readonly kind: 'rejected'; readonly reason: string }
  | { readonly kind: 'skipped' };

const ACKED: Outcome = { kind: 'acked' };
const SKIPPED: Outcome = { kind: 'skipped' };
const ACK = HandlerOutcome.ack();
/** What `call` gives back for a run that did not start (see `ExecutorHost.mayStart`): skipped. */
const NOT_STARTED = Symbol('not started');

/** The subscription whose handler is being called at this moment (its synchronous part), if any. */
let calling: object | undefined;

/** Asked by `app.stop()`: whether it is called from a handler of one of the app's subscriptions. */
export function callingHandlerHost(): object | undefined {
  return calling;
}

/** What the executor needs of its subscription. */
export interface ExecutorHost {
  /** True once the subscription stops taking new work: work still queued is skipped. */
  readonly stopping: () => boolean;
  /** What `callingHandlerHost()` answers while the handler's synchronous part runs. */
  readonly owner: object;
  /** What a handler's context may use. */
  readonly port: ContextPort;
  /** The middlewares around each attempt, outermost first: the app's, the routers', the subscriber's. */
  readonly middlewares: readonly Middleware[];
  /** Where each outcome goes: the Ledger. */
  record(work: Work, slot: Slot<Work>, outcome: Outcome): Promise<void> | undefined;
  /**
   * Whether a paced run may start its attempt (a store owned by partition: see `Pacer.mayStart`), or a
   * promise of it; the attempt is skipped when not. Without it, every run starts.
   */
  readonly mayStart?: (work: Run) => boolean | Promise<boolean>;
  /**
   * Around each attempt that starts (tracing: its span, active while it runs): calls `invoke(work)`, the
   * middlewares and the handler, and returns what it returns. Without it, `invoke` is called as it is.
   */
  readonly around?: ((work: Work, invoke: (work: Work) => unknown) => unknown) | undefined;
}

/** The outcome of an attempt that ran past the subscriber's `timeoutMs`. */
export function timedOut(timeoutMs: number): Outcome {
  const error = new SluiceError('HANDLER_TIMEOUT', `handler did not finish within ${timeoutMs} ms`);
  return { kind: 'failed', reason: reasonOf(error), timeout: true, error };
}

/**
 * Dispatch's step, as the workers run it: one attempt at a piece of work. Calls the handler with the work's
 * payload and its `ctx`, and hands what came of it, as an `Outcome`, to `host.record` (the Ledger). Never
 * throws: whatever a handler does, the worker goes on.
 */
export class Executor implements JobRunner<Work> {
  /** The middlewares composed around the handler, once; undefined without any (the handler is called as it is). */
  private readonly chain: Chain | undefined;
  /** An attempt that starts: the handler under its middlewares, inside `host.around` when there is one. */
  private readonly invoke: (work: Work) => unknown;
  /** The handler, publishing what it returns where the subscriber publishes its results. */
  private readonly handler: Handler;

  constructor(
    private readonly sub: CompiledSubscriber,
    private readonly host: ExecutorHost,
    private readonly log: Logger,
  ) {
    this.handler = resultHandler(sub);
    this.chain = composeAttempt(host.middlewares, (ctx) => this.handle(ctx));
    const around = host.around;
    // Called as this.invoke(work), so with this executor as `this`: a method call, as before tracing.
    // eslint-disable-next-line @typescript-eslint/unbound-method
    if (around === undefined) this.invoke = this.invokeChain;
    else {
      const invoke = (work: Work): unknown => this.invokeChain(work);
      this.invoke = (work) => around(work, invoke);
    }
  }

  /** A worker takes the work: it runs unless the subscription stops or its partitions were revoked. */
  begin(work: Work, slot: Slot<Work>): boolean {
    if (this.host.stopping() || isRevoked(work)) {
      void this.host.record(work, slot, SKIPPED);
      return false;
    }
    this.prepare(work, slot);
    return true;
  }

  /**
   * Calls the handler, once a paced run may start (else gives back NOT_STARTED, skipped);
   * `callingHandlerHost()` names this subscription during the handler's synchronous part.
   */
  call(work: Work): unknown {
    const may = work.kind === 'run' ? (this.host.mayStart?.(work) ?? true) : true;
    if (may === true) return this.invoke(work);
    if (may === false) return NOT_STARTED;
    // A watchdog that timed the wait out has aborted the attempt's signal and moved on: it does not start.
    return may.then((yes) => (yes && !work.context!.signal.aborted ? this.invoke(work) : NOT_STARTED));
  }

  private invokeChain(work: Work): unknown {
    const outer = calling;
    calling = this.host.owner;
    try {
      const chain = this.chain;
      const ctx = work.context!; // made by begin
      return chain === undefined ? this.handler(work.payload, ctx) : chain(ctx);
    } finally {
      calling = outer;
    }
  }

  /** The innermost step of the middlewares' chain: the handler, this subscription named while it runs. */
  private handle(ctx: MiddlewareContext): unknown {
    const outer = calling;
    calling = this.host.owner;
    try {
      return this.handler(ctx.payload, ctx);
    } finally {
      calling = outer;
    }
  }

  /** The handler returned (its promise resolved with) `value`. */
  returned(work: Work, slot: Slot<Work>, value: unknown): Promise<void> | undefined {
    return this.host.record(work, slot, this.outcomeOf(value));
  }

  /** The handler threw (its promise rejected with) `error`. */
  threw(work: Work, slot: Slot<Work>, error: unknown): Promise<void> | undefined {
    this.log.warn('handler failed', { id: messageId(messageOf(work)), attempt: work.attempt, error });
    return this.host.record(work, slot, { kind: 'failed', reason: reasonOf(error), error });
  }

  /** A new attempt begins on `slot`: the watchdog counts it, and the work's context gets a fresh signal. */
  private prepare(work: Work, slot: Slot<Work>): void {
    slot.attempts++;
    slot.waiting = false;
    work.context ??= new HandlerContext(work, this.host.port);
    work.context.beginAttempt();
  }

  /** What a handler's return value means. */
  private outcomeOf(result: unknown): Outcome {
    if (result === undefined || result === null || result === ACK) return ACKED;
    if (result === NOT_STARTED) return SKIPPED;
    if (!(result instanceof HandlerOutcome)) {
      const reason = `handler returned ${typeof result}, not a HandlerOutcome`;
      return { kind: 'failed', reason, error: new SluiceError('OUTCOME_INVALID', reason) };
    }
    if (result.kind === 'reject') return { kind: 'rejected', reason: result.reason ?? 'rejected' };
    if (result.kind === 'retry') return { kind: 'failed', reason: 'retry requested', delayMs: result.delayMs };
    return ACKED;
  }
}
