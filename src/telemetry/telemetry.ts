import type { Clock, Logger, StoreObserver } from '../core/ports.js';
import { SluiceError, show } from '../core/errors.js';
import type { CompiledSubscriber } from '../declare/compile.js';
import { healthOf, lagOf, type AppHealth } from './health.js';
import { HttpServer, type HttpRoute } from './http-server.js';
import { AppMetrics, loadPromClient } from './metrics/metrics.js';
import type { AppTracer, PipelineObserver } from '../pipeline/delivery-events.js';
import type { Pacer } from '../pace-stage/pacer.js';
import type { Subscription } from '../pipeline/subscription.js';
import { AppTracing, loadOtelApi } from './tracing/tracing.js';
import {
  thresholdsOf,
  type HealthThresholds,
  type MetricsRegistry,
  type TelemetrySettings,
} from './telemetry-options.js';

/** What telemetry reads of its app. */
export interface TelemetryHost {
  /** The app's name, for its errors. */
  readonly name: string;
  readonly clock: Clock;
  readonly log: Logger;
  readonly state: () => 'new' | 'starting' | 'running' | 'stopping' | 'stopped';
  readonly subscriptions: () => readonly Subscription[];
  readonly pacer: () => Pacer | undefined;
  /** More routes of the HTTP server (the console's). @default none */
  readonly routes?: readonly HttpRoute[];
}

/**
 * An app's metrics, traces, health and HTTP server. Metrics are loaded (prom-client, by a dynamic import) and
 * registered at the first start, and kept for the app's life; so is tracing (@opentelemetry/api); the server
 * listens from the start of each start until its stop.
 */
export class Telemetry {
  private metrics: AppMetrics | undefined;
  /** The app's tracing, once loaded (at the first start of an app with `tracing`). */
  tracing: AppTracer | undefined;
  private server: HttpServer | undefined;
  private readonly thresholds: HealthThresholds;

  constructor(
    private readonly settings: TelemetrySettings,
    private readonly host: TelemetryHost,
  ) {
    this.thresholds = thresholdsOf(settings.health);
  }

  /** Loads and registers the metrics (once), and starts the HTTP server: the first step of a start. */
  async open(): Promise<void> {
    const { metrics, http, tracing } = this.settings;
    if (tracing !== undefined && this.tracing === undefined)
      this.tracing = new AppTracing(await loadOtelApi(), tracing);
    if (metrics !== undefined && this.metrics === undefined) {
      const client = await loadPromClient();
      const given = metrics === true ? undefined : metrics.registry;
      const registry: MetricsRegistry = given ?? new client.Registry();
      const { log, subscriptions, pacer, clock } = this.host;
      this.metrics = new AppMetrics(client, registry, { log, subscriptions, pacer }, clock);
    }
    if (http !== undefined && this.server === undefined) {
      const server = new HttpServer({
        health: () => this.health(false),
        registry: () => this.metrics?.registry,
        log: this.host.log,
        routes: this.host.routes ?? [],
      });
      // The console's default address is loopback: what acts on the app is not offered to the network unasked.
      const host = http.host ?? (http.console !== undefined ? '127.0.0.1' : undefined);
      try {
        await server.listen(http.port, host);
      } catch (error) {
        const { code } = (error ?? {}) as { code?: unknown };
        const why = code === 'EADDRINUSE' ? 'is in use by another process' : 'cannot be listened on';
        throw new SluiceError(
          'HTTP_LISTEN_FAILED',
          `App "${this.host.name}": http.port ${http.port}${host === undefined ? '' : ` on http.host ${show(host)}`} ${why} (${typeof code === 'string' ? code : show(error)}); free it, or choose another port (0 picks a free one)`,
          { cause: error },
        );
      }
      this.server = server;
    }
  }

  /** Stops the HTTP server: the last step of a stop (or of a start that failed). */
  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    await server?.close();
  }

  /** The observer of a subscriber's seams, when the app has metrics. */
  get observe(): ((sub: CompiledSubscriber) => PipelineObserver) | undefined {
    const metrics = this.metrics;
    return metrics === undefined ? undefined : (sub) => metrics.observerOf(sub);
  }

  /** What the store reports to, when the app has metrics. */
  get storeObserver(): StoreObserver | undefined {
    return this.metrics?.store;
  }

  /** The port the HTTP server listens on, while it does. */
  get port(): number | undefined {
    return this.server?.port;
  }

  /** The app's health now; with `withLag`, each subscriber's lag asked of its broker. */
  health(withLag: boolean): Promise<AppHealth> {
    const { state, subscriptions, clock } = this.host;
    return healthOf(state(), subscriptions(), clock.now(), this.thresholds, withLag ? lagOf : undefined);
  }
}
