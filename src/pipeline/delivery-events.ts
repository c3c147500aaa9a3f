import type { PublishMiddleware } from '../core/middleware.js';
import type { CompiledSubscriber } from '../declare/compile.js';
import type { JobRunner, Slot } from '../dispatch/workers.js';
import type { Outcome } from './executor.js';
import type { RouteTracing } from '../pace-stage/send-routing.js';
import type { Work } from './work.js';

/**
 * What became of one attempt at a handler, or of a delivery that never reached one, as metrics count it:
 * - `ack`: the handler finished;
 * - `retry`: it failed (threw, asked for a retry, returned something else) with attempts left;
 * - `timeout`: it ran past the subscriber's `timeoutMs` (a retry follows, or the dead letter when it was the last);
 * - `reject`: it asked never to run again (`HandlerOutcome.reject()`): dead-lettered;
 * - `dead_letter`: it failed on its last attempt: dead-lettered;
 * - `decode_failed`: the message did not decode (or cannot be journaled for pace): dead-lettered without an attempt;
 * - `dropped`: a paced delivery over its `drop` rate: answered dropped, no run.
 */
export type HandledOutcome = 'ack' | 'retry' | 'timeout' | 'reject' | 'dead_letter' | 'decode_failed' | 'dropped';

/** Every {@link HandledOutcome}, in the order metrics list them. */
export const HANDLED_OUTCOMES: readonly HandledOutcome[] = [
  'ack',
  'retry',
  'timeout',
  'reject',
  'dead_letter',
  'decode_failed',
  'dropped',
];

/**
 * What telemetry sees of one subscription as work passes its seams (internal; the per-attempt half is meant
 * to become a middleware). Called on the delivery path: it must be cheap and must not throw.
 */
export interface PipelineObserver {
  /** The clock attempts are timed on, in milliseconds (fractions allowed). */
  readonly now: () => number;
  /** An attempt (or a delivery without one) came to `outcome`; `seconds` is the attempt's, when it ran. */
  handled(outcome: HandledOutcome, seconds?: number): void;
}

/** What tracing is told of each attempt's outcome at the `record` seam: its span ends there. */
export interface AttemptTracer {
  ended(work: Work, outcome: Outcome, handled: HandledOutcome | undefined): void;
}

/** One subscriber's tracing, as its subscription uses it (see `SubscriberTracing`). */
export interface SubscriberTracer extends AttemptTracer {
  /** Around each attempt that starts (`ExecutorHost.around`): its span, active while it runs. */
  readonly around: (work: Work, invoke: (work: Work) => unknown) => unknown;
}

/**
 * The app's tracing, as the subscriptions and the parts use it (see `AppTracing`): named without
 * OpenTelemetry's types, so that the package's declarations reach none of them.
 */
export interface AppTracer extends RouteTracing {
  /** The tracing of one subscriber's attempts. */
  of(sub: CompiledSubscriber, brokerKind: string): SubscriberTracer;
  /** The publish middleware that writes the trace context into what the subscriptions publish. */
  readonly publish: PublishMiddleware;
}

/** What the `record` seam tells telemetry of each outcome. */
export type AttemptEnded = (work: Work, slot: Slot<Work>, outcome: Outcome) => void;

/**
 * What the `record` seam calls with each outcome: metrics' count and tracing's end of the span, as the app
 * has them; undefined when it has neither, so that the seam checks one `undefined` and does nothing else.
 */
export function attemptEnded(
  observer: PipelineObserver | undefined,
  tracer: AttemptTracer | undefined,
  attempts: number,
): AttemptEnded | undefined {
  if (observer === undefined && tracer === undefined) return undefined;
  return (work, slot, outcome) => {
    const handled = handledOutcome(work, outcome, attempts);
    if (observer !== undefined && handled !== undefined)
      observer.handled(handled, (observer.now() - slot.startedAtMs) / 1000);
    tracer?.ended(work, outcome, handled);
  };
}

/**
 * What an attempt's outcome counts as, as it reaches the Ledger (the `record` seam); undefined for an
 * attempt that did not run (skipped: the subscription stopping, its partition revoked).
 */
export function handledOutcome(work: Work, outcome: Outcome, attempts: number): HandledOutcome | undefined {
  switch (outcome.kind) {
    case 'acked':
      return 'ack';
    case 'rejected':
      return 'reject';
    case 'skipped':
      return undefined;
    default:
      if (outcome.timeout === true) return 'timeout';
      return work.attempt < attempts ? 'retry' : 'dead_letter';
  }
}

/**
 * The executor with each attempt's start noted on its slot (`Slot.startedAtMs`), so that the `record` seam
 * can time it: used only when the app has metrics, so that an app without them pays nothing.
 */
export class TimedRunner implements JobRunner<Work> {
  constructor(
    private readonly runner: JobRunner<Work>,
    private readonly now: () => number,
  ) {}

  begin(work: Work, slot: Slot<Work>): boolean {
    slot.startedAtMs = this.now();
    return this.runner.begin(work, slot);
  }

  call(work: Work, slot: Slot<Work>): unknown {
    return this.runner.call(work, slot);
  }

  returned(work: Work, slot: Slot<Work>, value: unknown): Promise<void> | undefined {
    return this.runner.returned(work, slot, value);
  }

  threw(work: Work, slot: Slot<Work>, error: unknown): Promise<void> | undefined {
    return this.runner.threw(work, slot, error);
  }
}
