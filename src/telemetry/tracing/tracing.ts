/**
 * OpenTelemetry tracing, loaded only for an app with `tracing`: this is the one module that loads
 * `@opentelemetry/api` (by a dynamic import, at `start()`); every other one imports its types at most.
 * See docs/observability.md, "Traces".
 */
import type * as Otel from '@opentelemetry/api';
import { viewOfThrown } from '../../core/errors.js';
import type { HeaderValue, Headers, InboundMessage } from '../../core/message.js';
import type { PublishInfo, PublishMiddleware } from '../../core/middleware.js';
import type { CompiledSubscriber } from '../../declare/compile.js';
import type { Receipt } from '../../pace/rules.js';
import type { Outcome } from '../../pipeline/executor.js';
import type { AppTracer, HandledOutcome, SubscriberTracer } from '../../pipeline/delivery-events.js';
import { loadOptionalPeer } from '../optional-peer.js';
import { RunLinks } from './run-links.js';
import { LINKS_MAX, type TracingOptions } from '../telemetry-options.js';
import { formatTraceparent, parseTraceparent, TRACEPARENT, TRACESTATE } from './trace-context.js';
import { ATTEMPT_SPAN, type Work, type WorkContext } from '../../pipeline/work.js';

type Api = typeof Otel;

/** The @opentelemetry/api versions tracing is written and tested against (package.json's `peerDependencies`). */
export const OTEL_API_RANGE = '^1.9.0';

/** The name of the app's tracer (its instrumentation scope). */
export const TRACER_NAME = 'sluice';

/** Loads @opentelemetry/api (an optional peer dependency), or says how to install it. */
export function loadOtelApi(load: () => Promise<unknown> = () => import('@opentelemetry/api')): Promise<Api> {
  return loadOptionalPeer<Api>(
    { name: '@opentelemetry/api', range: OTEL_API_RANGE, neededBy: 'App tracing needs', export: 'trace' },
    load,
  );
}

/** `messaging.system` of a broker: `kafka` for Kafka, `sluice-<kind>` for the others (`sluice-memory`). */
export function messagingSystem(kind: string): string {
  return kind === 'kafka' ? 'kafka' : `sluice-${kind}`;
}

type MutableHeaders = Record<string, HeaderValue | readonly HeaderValue[]>;

/**
 * An app's tracing: its tracer, the trace context read from and written to headers (by the propagator
 * registered with the API when the app starts, else the W3C headers by hand), the publish middleware that
 * writes it into what is published, and the links of paced runs. The span of a handler context's last attempt
 * is kept on the context itself (`ATTEMPT_SPAN`).
 */
export class AppTracing implements AppTracer {
  readonly tracer: Otel.Tracer;
  /** The most links on one span. */
  readonly linksMax: number;
  /** The contexts of the events that joined each paced run (see {@link RunLinks}). */
  readonly runs: RunLinks<Otel.Link>;
  /** True when a propagator is registered with the API: it reads and writes the headers. */
  readonly propagated: boolean;
  /** The API's global provider when it is the app's and had no SDK behind it as the app started, else undefined. */
  private readonly proxy: Otel.ProxyTracerProvider | undefined;
  /** What `proxy` delegates to while no SDK is registered (the API's no-op provider). */
  private readonly noop: Otel.TracerProvider | undefined;
  /** The span of no trace, what the API's no-op tracer makes without a parent, and the context with it. */
  readonly invalidSpan: Otel.Span;
  readonly invalidContext: Otel.Context;
  /** The headers the propagator writes: a `ctx.publish` that sets one of them keeps its own. */
  private readonly fields: readonly string[];

  constructor(
    readonly api: Api,
    options: TracingOptions | true,
  ) {
    const given = options === true ? undefined : options;
    const provider = (given?.tracerProvider as Otel.TracerProvider | undefined) ?? api.trace.getTracerProvider();
    this.tracer = provider.getTracer(TRACER_NAME);
    // With no SDK registered (yet), the tracer is the API's proxy of its no-op tracer: see `sdkless`.
    if (
      api.ProxyTracerProvider !== undefined &&
      provider instanceof api.ProxyTracerProvider &&
      provider.getDelegateTracer(TRACER_NAME) === undefined
    ) {
      this.proxy = provider;
      this.noop = provider.getDelegate();
    }
    this.invalidSpan = api.trace.wrapSpanContext(api.INVALID_SPAN_CONTEXT);
    this.invalidContext = api.trace.setSpan(api.ROOT_CONTEXT, this.invalidSpan);
    this.linksMax = given?.linksMax ?? LINKS_MAX;
    this.runs = new RunLinks(this.linksMax);
    const fields = api.propagation.fields();
    this.propagated = fields.length > 0;
    this.fields = this.propagated ? fields : [TRACEPARENT, TRACESTATE];
  }

  /**
   * True while the tracer is the API's no-op one (no SDK registered, now or since the app started): the
   * attempt's span is then the incoming trace context as it is, made without a call of the tracer.
   */
  sdkless(): boolean {
    return this.proxy !== undefined && this.proxy.getDelegate() === this.noop;
  }

  /** The tracing of one subscriber's attempts. */
  of(sub: CompiledSubscriber, brokerKind: string): SubscriberTracing {
    return new SubscriberTracing(this, sub, brokerKind);
  }

  /** The context a message's headers carry (the root context when they carry none). */
  parentOf(headers: Headers): Otel.Context {
    const { api } = this;
    if (this.propagated) return api.propagation.extract(api.ROOT_CONTEXT, headers);
    const sc = this.spanContextOf(headers);
    return sc === undefined ? api.ROOT_CONTEXT : api.trace.setSpanContext(api.ROOT_CONTEXT, sc);
  }

  /** The span context a message's headers carry, if a valid one. */
  spanContextOf(headers: Headers): Otel.SpanContext | undefined {
    const { api } = this;
    if (this.propagated) {
      const sc = api.trace.getSpanContext(api.propagation.extract(api.ROOT_CONTEXT, headers));
      return sc !== undefined && api.trace.isSpanContextValid(sc) ? sc : undefined;
    }
    const parent = parseTraceparent(headers[TRACEPARENT]);
    if (parent === undefined) return undefined;
    const state = headers[TRACESTATE];
    const { traceId, spanId, traceFlags } = parent;
    return { traceId, spanId, traceFlags, isRemote: true, traceState: state ? api.createTraceState(state) : undefined };
  }

  /** Links to the first `linksMax` of `messages` that carry a trace context. */
  linksOf(messages: readonly InboundMessage[]): Otel.Link[] {
    const links: Otel.Link[] = [];
    for (const m of messages) {
      if (links.length >= this.linksMax) break;
      const context = this.spanContextOf(m.headers);
      if (context !== undefined) links.push({ context });
    }
    return links;
  }

  /** A paced delivery's event joined a run: the run's span links to the delivery's trace context. */
  joined(receipt: Receipt, headers: Headers): void {
    if (receipt.kind !== 'run' || receipt.duplicate) return;
    const context = this.spanContextOf(headers);
    if (context !== undefined) this.runs.add(receipt.runId, { context });
  }

  /**
   * For an `app.send` called under an active span: what links the run its event joins to that span (told the
   * receipt as the event is applied), or undefined when no span is active.
   */
  sending(): ((receipt: Receipt) => void) | undefined {
    const { trace } = this.api;
    const context = trace.getActiveSpan()?.spanContext();
    if (context === undefined || !trace.isSpanContextValid(context)) return undefined;
    return (r) => {
      if (r.kind === 'run' && !r.duplicate) this.runs.add(r.runId, { context });
    };
  }

  /** The headers of the span active now, or undefined when none is. */
  activeHeaders(): MutableHeaders | undefined {
    const { api } = this;
    const active = api.context.active();
    const sc = api.trace.getSpanContext(active);
    if (sc === undefined || !api.trace.isSpanContextValid(sc)) return undefined;
    const headers: MutableHeaders = {};
    this.inject(active, headers);
    return headers;
  }

  /** The headers of the trace context `headers` carry, or undefined when they carry none. */
  headersOf(from: Headers): MutableHeaders | undefined {
    const { api } = this;
    const sc = this.spanContextOf(from);
    if (sc === undefined) return undefined;
    const headers: MutableHeaders = {};
    this.inject(api.trace.setSpanContext(api.ROOT_CONTEXT, sc), headers);
    return headers;
  }

  /**
   * The publish middleware that writes the trace context into what the app's subscribers publish: for a
   * `ctx.publish`, the active span's (else the attempt's); for a dead letter, the span of the attempt that
   * dead-lettered it. A `ctx.publish` that sets the headers itself keeps them; a dead letter's original
   * `traceparent` is replaced.
   */
  readonly publish: PublishMiddleware = (message, next, info) => {
    const context = this.contextOf(info);
    if (context === undefined) return next(message);
    const own = message.headers;
    if (info.kind !== 'dead-letter' && own !== undefined && this.fields.some((f) => own[f] !== undefined))
      return next(message);
    const headers: MutableHeaders = { ...own };
    this.inject(context, headers);
    return next({ ...message, headers });
  };

  /** What a publish is made under: a context with a valid span, or undefined. */
  private contextOf(info: PublishInfo): Otel.Context | undefined {
    const { api } = this;
    if (info.kind !== 'dead-letter') {
      const active = api.context.active();
      const sc = api.trace.getSpanContext(active);
      if (sc !== undefined && api.trace.isSpanContextValid(sc)) return active;
    }
    // The attempt's span: what a ctx.publish is under when no span is active (no context manager registered).
    const span = (info.context as WorkContext | undefined)?.[ATTEMPT_SPAN] as Otel.Span | undefined;
    if (span === undefined || !api.trace.isSpanContextValid(span.spanContext())) return undefined;
    return api.trace.setSpan(api.ROOT_CONTEXT, span);
  }

  /** Writes `context`'s trace context into `headers`. */
  private inject(context: Otel.Context, headers: MutableHeaders): void {
    const { api } = this;
    if (this.propagated) return api.propagation.inject(context, headers);
    const sc = api.trace.getSpanContext(context)!;
    headers[TRACEPARENT] = formatTraceparent(sc);
    const state = sc.traceState?.serialize();
    if (state) headers[TRACESTATE] = state;
    else delete headers[TRACESTATE];
  }
}

/**
 * One subscriber's spans: one CONSUMER span per attempt at its handler, made as the attempt starts and
 * active while the middlewares and the handler run (see `ExecutorHost.around`), ended with the attempt's
 * outcome at the `record` seam (so that an attempt that timed out ends its span as the watchdog gives it up).
 */
export class SubscriberTracing implements SubscriberTracer {
  private readonly name: string;
  private readonly attempts: number;
  /**
   * The span's kind and the attributes a sampler sees, the subscriber's own (shared by its attempts, copied by
   * the SDK): the per-attempt ones are set after the span starts, and only on a span that records.
   */
  private readonly start: Otel.SpanOptions;

  constructor(
    private readonly app: AppTracing,
    sub: CompiledSubscriber,
    brokerKind: string,
  ) {
    this.name = `process ${sub.topic}`;
    this.attempts = sub.retry.attempts;
    const attributes: Otel.Attributes = {
      'messaging.system': messagingSystem(brokerKind),
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.destination.name': sub.topic,
      'messaging.consumer.group.name': sub.group,
      'sluice.subscriber': sub.name,
    };
    this.start = Object.freeze({ kind: app.api.SpanKind.CONSUMER, attributes: Object.freeze(attributes) });
  }

  /** Starts the attempt's span and calls `invoke` (the middlewares, then the handler) with it active. */
  readonly around = (work: Work, invoke: (work: Work) => unknown): unknown => {
    const { app } = this;
    const { api } = app;
    const delivery = work.kind === 'delivery';
    const parent = delivery ? app.parentOf(work.message.headers) : api.ROOT_CONTEXT;
    if (app.sdkless()) return this.untraced(work, invoke, parent);
    let start = this.start;
    // A batch's links are read before the span starts, for the sampler: one batch's cost, not one message's.
    if (!delivery) {
      const links = work.kind === 'batch' ? app.linksOf(work.messages) : app.runs.of(work.run.id)?.slice();
      if (links !== undefined && links.length > 0) start = { ...start, links };
    }
    const span = app.tracer.startSpan(this.name, start, parent);
    const context = work.context!;
    context[ATTEMPT_SPAN] = span; // what it publishes, and its dead letters, are its children
    if (span.isRecording()) {
      if (delivery) {
        const m = work.message;
        span.setAttribute('messaging.destination.partition.id', String(m.partition));
        span.setAttribute('messaging.kafka.offset', m.offset);
        if (m.key !== undefined) span.setAttribute('messaging.kafka.message.key', m.key);
      } else if (work.kind === 'batch') span.setAttribute('messaging.batch.message_count', work.messages.length);
      else {
        span.setAttribute('messaging.batch.message_count', work.run.size);
        span.setAttribute('sluice.run.id', work.run.id);
      }
      span.setAttribute('sluice.attempt', work.attempt);
    }
    return api.context.with(api.trace.setSpan(parent, span), invoke, undefined, work);
  };

  /**
   * An attempt with no SDK registered: what the API's no-op tracer would make — a non-recording span of the
   * incoming trace context, so that what the handler publishes carries it on — without calling it, building
   * no attributes or links. With no trace context incoming and none active, nothing is made active.
   */
  private untraced(work: Work, invoke: (work: Work) => unknown, parent: Otel.Context): unknown {
    const { app } = this;
    const { api } = app;
    const span = parent === api.ROOT_CONTEXT ? undefined : api.trace.getSpan(parent);
    if (span !== undefined && (!app.propagated || api.trace.isSpanContextValid(span.spanContext()))) {
      work.context![ATTEMPT_SPAN] = span;
      return api.context.with(parent, invoke, undefined, work);
    }
    work.context![ATTEMPT_SPAN] = app.invalidSpan;
    if (parent === api.ROOT_CONTEXT) {
      if (api.context.active() === api.ROOT_CONTEXT) return invoke(work);
      return api.context.with(app.invalidContext, invoke, undefined, work);
    }
    return api.context.with(api.trace.setSpan(parent, app.invalidSpan), invoke, undefined, work);
  }

  /** The attempt came to `outcome`: its span ends, with the outcome and, for a failure, the error. */
  ended(work: Work, outcome: Outcome, handled: HandledOutcome | undefined): void {
    const { app } = this;
    if (
      work.kind === 'run' &&
      outcome.kind !== 'skipped' &&
      (outcome.kind !== 'failed' || work.attempt >= this.attempts)
    )
      app.runs.forget(work.run.id); // it does not run again here
    const span = work.context?.[ATTEMPT_SPAN] as Otel.Span | undefined;
    if (span === undefined || !span.isRecording()) return; // an attempt that did not start, or was not sampled
    if (handled !== undefined) span.setAttribute('sluice.outcome', handled);
    if (outcome.kind === 'failed' || outcome.kind === 'rejected') {
      const error = outcome.kind === 'failed' ? outcome.error : undefined;
      if (error !== undefined) {
        // Read once, safely: a thrown revoked Proxy (or one whose `get` throws) must not fail the attempt's end.
        const thrown = viewOfThrown(error);
        const { name, message, stack } = thrown;
        span.recordException(
          thrown.error
            ? {
                name,
                message,
                ...(stack === undefined ? {} : { stack }),
                ...(thrown.code ? { code: thrown.code } : {}),
              }
            : message,
        );
        span.setAttribute('error.type', thrown.code ?? thrown.className ?? '_OTHER');
      }
      span.setStatus({ code: app.api.SpanStatusCode.ERROR, message: outcome.reason });
    }
    span.end();
  }
}
