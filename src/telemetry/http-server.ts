import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../core/ports.js';
import type { AppHealth } from './health.js';
import type { MetricsRegistry } from './telemetry-options.js';

/**
 * More paths the server answers, handed in by the app (the console): a route takes every request for its
 * `prefix` and under it (`/console` takes `/console` and `/console/api/inspect`, not `/consoles`), whatever
 * its method, and answers it whole. A throw (or a rejection) is logged and answered 500.
 */
export interface HttpRoute {
  /** The path it answers, and every path under it: starts with `/`, no `/` at the end. */
  readonly prefix: string;
  /** Answers the request; `path` is the request's path, without its query. */
  readonly answer: (req: IncomingMessage, res: ServerResponse, path: string) => Promise<void>;
}

/** What the server answers from. */
export interface HttpSources {
  /** The app's health now, without asking a broker (probes must be cheap). */
  readonly health: () => Promise<AppHealth>;
  /** The registry served at `/metrics`, when the app has metrics. */
  readonly registry: () => MetricsRegistry | undefined;
  readonly log: Logger;
  /** More routes, asked before the server's own paths. @default none */
  readonly routes?: readonly HttpRoute[];
}

/**
 * The server's bounds on a request, far below Node's defaults (60 s for the headers, 300 s for a request):
 * a probe or a scrape is a small GET, and a client that trickles its request must not hold a connection
 * (and a socket) for minutes. Timed-out connections are looked for every second.
 */
export const SERVER_TIMEOUTS = Object.freeze({
  headersTimeout: 5_000,
  requestTimeout: 10_000,
  connectionsCheckingInterval: 1_000,
});

/**
 * The app's HTTP server: `/health/live`, `/health/ready` (200 or 503 and a small JSON body), `/metrics`, and
 * the paths of its extra routes (which answer their own methods). Any other path is 404, whatever the
 * method; a method other than GET or HEAD on the server's own paths, 405.
 */
export class HttpServer {
  private server: Server | undefined;

  constructor(private readonly sources: HttpSources) {}

  /** Listens on `port` (0: one the system picks) of `host`; resolves once listening. */
  async listen(port: number, host: string | undefined): Promise<void> {
    const server = createServer(SERVER_TIMEOUTS, (req, res) => void this.answer(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.unref(); // the app holds the process while it runs; the server alone never does
    this.server = server;
  }

  /** The Node server, once listening (for tests of its settings). */
  get node(): Server | undefined {
    return this.server;
  }

  /** The port listened on, once listening. */
  get port(): number | undefined {
    return (this.server?.address() as AddressInfo | null)?.port;
  }

  /** Stops listening and ends the connections open. */
  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  }

  private async answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const path = (req.url ?? '/').split('?', 1)[0]!;
      const route = this.sources.routes?.find((r) => path === r.prefix || path.startsWith(`${r.prefix}/`));
      if (route !== undefined) return await route.answer(req, res, path);
      const probe = path === '/health/live' || path === '/health/ready';
      const registry = path === '/metrics' ? this.sources.registry() : undefined;
      if (!probe && registry === undefined) return send(res, 404, 'text/plain', 'not found\n');
      if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'text/plain', 'method not allowed\n');
      if (probe) return await this.probe(res, path === '/health/live');
      send(res, 200, registry!.contentType, await registry!.metrics());
    } catch (error) {
      this.sources.log.warn('http: a request failed', { url: req.url, error });
      if (!res.headersSent) send(res, 500, 'text/plain', 'internal error\n');
      else res.end();
    }
  }

  private async probe(res: ServerResponse, live: boolean): Promise<void> {
    const h = await this.sources.health();
    const ok = live ? h.live : h.ready;
    const body = { status: h.status, ...(live ? { live: ok } : { ready: ok }), reasons: h.reasons };
    send(res, ok ? 200 : 503, 'application/json', `${JSON.stringify(body)}\n`);
  }
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}
