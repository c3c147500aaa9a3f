/**
 * Where an app's metrics go: a prom-client `Registry` (structurally: what the app calls of one). The app
 * registers its metrics in it at `start()`; they are read when it is scraped.
 *
 * @category Observability
 */
export interface MetricsRegistry {
  /** The content type of what `metrics()` returns (prom-client's text format). */
  readonly contentType: string;
  /** Every metric registered, in Prometheus's text format (a scrape). */
  metrics(): Promise<string>;
  /** Registers a metric; prom-client throws when one of that name is registered already. */
  registerMetric(metric: never): void;
}

/**
 * The app's Prometheus metrics (see docs/observability.md for the list). Measuring them loads the optional
 * peer dependency `prom-client` at `start()`; an app without `metrics` never loads it.
 *
 * @category Observability
 */
export interface MetricsOptions {
  /**
   * The prom-client `Registry` to register the app's metrics in (one app per registry: the names are
   * fixed). @default a registry of the app's own, served at `/metrics` by the app's `http` server
   */
  registry?: MetricsRegistry;
}

/**
 * The app's small HTTP server, listening from `start()` until `stop()` ends: `GET /health/live` and
 * `GET /health/ready` (200 or 503, with a small JSON body, for Kubernetes probes), `GET /metrics` when
 * the app has `metrics`, and the console under `/console` when it has `console`.
 *
 * @category Observability
 */
export interface HttpOptions {
  /** The TCP port: an integer from 0 to 65535 (0: one the system picks; see `App.httpPort()`). */
  port: number;
  /**
   * The address to listen on. @default every address of the host (`::`, or `0.0.0.0` without IPv6); with
   * `console`, `127.0.0.1` only. That default moves the health probes and `/metrics` to loopback too: give
   * `host` (`'0.0.0.0'`, say) where a kubelet or Prometheus reads them from another address.
   */
  host?: string;
  /**
   * The console (docs/console.md): a page at `/console` and a JSON API under `/console/api/` that show the
   * running subscribers and act on them (pause, resume, cancel, replay). Without it nothing under `/console`
   * exists. Turning it on makes the server listen on `127.0.0.1` unless `host` is given. @default off
   */
  console?: ConsoleOptions;
}

/**
 * The console's settings (`http.console`).
 *
 * @category Observability
 */
export interface ConsoleOptions {
  /**
   * The secret its actions (pause, resume, cancel, replay) must carry, as `authorization: Bearer <token>`: a
   * non-empty string. Without it the console shows, and refuses every action (403). @default none
   */
  token?: string;
}

/**
 * When the app stops being live (`/health/live` answers 503, `app.health()` says `degraded`): a consumer
 * that has not polled, or an attempt at a handler that has run, for longer than these.
 *
 * @category Observability
 */
export interface HealthOptions {
  /**
   * The longest a subscriber may go without polling its broker (or taking messages it has) before the app
   * is not live, in milliseconds: a finite number > 0. @default 300_000 (5 minutes)
   */
  maxPollGapMs?: number;
  /**
   * The longest an attempt at a handler may run before the app is not live, in milliseconds: a finite
   * number > 0. A subscriber's `timeoutMs` ends an attempt before, when it is shorter. @default 300_000
   */
  maxInFlightMs?: number;
}

/**
 * Where an app's spans go: an OpenTelemetry `TracerProvider` (structurally: what the app calls of one), such
 * as the SDK's `BasicTracerProvider` or `NodeTracerProvider`.
 *
 * @category Observability
 */
export interface TracerProviderLike {
  /** The tracer the app starts its spans with (asked once, at `start()`, as `getTracer('sluice')`). */
  getTracer(name: string, version?: string): object;
}

/**
 * OpenTelemetry tracing (see docs/observability.md, "Traces"): a CONSUMER span per attempt at a handler,
 * its parent read from the message's `traceparent`, and the context of the attempt carried in the headers of
 * what it publishes. Tracing loads the optional peer dependency `@opentelemetry/api` at `start()`; an app
 * without `tracing` never loads it.
 *
 * @category Observability
 */
export interface TracingOptions {
  /**
   * The provider of the app's tracer. @default the API's global one (`trace.getTracerProvider()`): the SDK
   * registered in the process, or the API's no-op tracer when none is
   */
  tracerProvider?: TracerProviderLike;
  /**
   * The most span links on the span of a batch or of a paced run (one per message, or per event, that
   * carried a trace context; the first ones). An integer from 0 to 1000. @default 32
   */
  linksMax?: number;
}

/** The most links on a span unless `tracing.linksMax` says otherwise. */
export const LINKS_MAX = 32;

/** The health thresholds, with their defaults applied. */
export interface HealthThresholds {
  readonly maxPollGapMs: number;
  readonly maxInFlightMs: number;
}

/** What the app's telemetry settings hold, as App's options name them. */
export interface TelemetrySettings {
  readonly metrics?: MetricsOptions | true | undefined;
  readonly http?: HttpOptions | undefined;
  readonly health?: HealthOptions | undefined;
  readonly tracing?: TracingOptions | true | undefined;
}

/** The thresholds of `health`, defaults applied. */
export function thresholdsOf(health: HealthOptions | undefined): HealthThresholds {
  return { maxPollGapMs: health?.maxPollGapMs ?? 300_000, maxInFlightMs: health?.maxInFlightMs ?? 300_000 };
}

type Bad = (field: string, expected: string, value: unknown) => never;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Throws (through `bad`) on a key of `value` that is not one of `known`. */
function onlyKnown(field: string, value: Record<string, unknown>, known: readonly string[], bad: Bad): void {
  for (const key of Object.keys(value))
    if (!known.includes(key)) bad(`${field}.${key}`, `a known setting (${known.join(', ')})`, value[key]);
}

/**
 * Checks `metrics`, `http`, `health` and `tracing`: each error names the field (`http.port`, say) and the
 * value. `bad` throws the app's `CONFIG_INVALID`.
 */
export function checkTelemetry(options: TelemetrySettings, bad: Bad): void {
  const { metrics, http, health, tracing } = options;
  if (metrics !== undefined && metrics !== true) checkMetrics(metrics, bad);
  if (http !== undefined) checkHttp(http, bad);
  if (health !== undefined) checkHealth(health, bad);
  if (tracing !== undefined && tracing !== true) checkTracing(tracing, bad);
  const own = metrics !== undefined && (metrics === true || metrics.registry === undefined);
  if (own && http === undefined)
    bad('metrics', 'given a registry, or served by the app (with http: { port })', metrics);
}

function checkMetrics(metrics: MetricsOptions, bad: Bad): void {
  if (!isObject(metrics)) return bad('metrics', 'true or an object { registry? }', metrics);
  onlyKnown('metrics', metrics, ['registry'], bad);
  const r: unknown = metrics.registry;
  if (r !== undefined && !(isObject(r) && typeof r.metrics === 'function' && typeof r.registerMetric === 'function'))
    bad('metrics.registry', 'a prom-client Registry', r);
}

function checkHttp(http: HttpOptions, bad: Bad): void {
  if (!isObject(http)) return bad('http', 'an object { port, host?, console? }', http);
  onlyKnown('http', http, ['port', 'host', 'console'], bad);
  const port = http.port;
  if (!(Number.isInteger(port) && port >= 0 && port <= 65535)) bad('http.port', 'an integer from 0 to 65535', port);
  if (http.host !== undefined && (typeof http.host !== 'string' || http.host === ''))
    bad('http.host', 'a non-empty string', http.host);
  const c: unknown = http.console;
  if (c === undefined) return;
  if (!isObject(c)) return bad('http.console', 'an object { token? }', c);
  onlyKnown('http.console', c, ['token'], bad);
  if (c.token !== undefined && (typeof c.token !== 'string' || c.token === ''))
    bad('http.console.token', 'a non-empty string', c.token);
}

function checkHealth(health: HealthOptions, bad: Bad): void {
  if (!isObject(health)) return bad('health', 'an object { maxPollGapMs?, maxInFlightMs? }', health);
  onlyKnown('health', health, ['maxPollGapMs', 'maxInFlightMs'], bad);
  for (const field of ['maxPollGapMs', 'maxInFlightMs'] as const) {
    const v = health[field];
    if (v !== undefined && !(typeof v === 'number' && v > 0 && Number.isFinite(v)))
      bad(`health.${field}`, 'a finite number > 0', v);
  }
}

function checkTracing(tracing: TracingOptions, bad: Bad): void {
  if (!isObject(tracing)) return bad('tracing', 'true or an object { tracerProvider?, linksMax? }', tracing);
  onlyKnown('tracing', tracing, ['tracerProvider', 'linksMax'], bad);
  const p: unknown = tracing.tracerProvider;
  if (p !== undefined && !(isObject(p) && typeof p.getTracer === 'function'))
    bad('tracing.tracerProvider', 'an OpenTelemetry TracerProvider (an object with getTracer())', p);
  const n: unknown = tracing.linksMax;
  if (n !== undefined && !(typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= 1000))
    bad('tracing.linksMax', 'an integer from 0 to 1000', n);
}
