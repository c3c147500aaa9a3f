import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { stringify } from 'yaml';
import type { App } from '../app/app.js';
import { asyncApiHtml } from '../app/asyncapi-html.js';
import { SystemClock } from '../core/clock.js';
import { jsonLogger } from '../core/logger.js';
import { CliError, EXIT } from './errors.js';

/** `sluice asyncapi`: the document as JSON (or YAML), on stdout or into `out`. */
export function asyncapi(app: App, options: { yaml: boolean; out: string | undefined }): void {
  const doc = app.asyncapi();
  const text = options.yaml ? stringify(doc) : `${JSON.stringify(doc, null, 2)}\n`;
  if (options.out === undefined) process.stdout.write(text);
  else writeFileSync(options.out, text);
}

/**
 * `sluice docs serve`: the document as a page at `/` and as JSON at `/asyncapi.json`, on `host:port`, until
 * SIGINT or SIGTERM. Prints `serving <url>` once it listens.
 */
export async function serveDocs(app: App, options: { host: string; port: number }): Promise<void> {
  const doc = app.asyncapi();
  const page = asyncApiHtml(doc);
  const json = JSON.stringify(doc, null, 2);
  const server = createServer((req, res) => {
    const route = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') return void res.writeHead(405).end();
    if (route === '/' || route === '/index.html')
      return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
    if (route === '/asyncapi.json') return void res.writeHead(200, { 'content-type': 'application/json' }).end(json);
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(new CliError(EXIT.failed, `docs serve: cannot listen on ${options.host}:${options.port}: ${error.code}`)),
    );
    server.listen(options.port, options.host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`serving http://${options.host}:${port}/\n`);
  await new Promise<void>((resolve) => {
    const stop = (): void => void server.close(() => resolve());
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

/**
 * `sluice publish`: `json` (parsed) on `topic`, through the app's first broker, checked first by the
 * decoder of the app's subscriber of that topic if it has one. Nothing of the app is started.
 */
export async function publish(
  app: App,
  topic: string,
  json: string,
  options: { key: string | undefined; headers: Record<string, string> },
): Promise<void> {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw new CliError(EXIT.usage, `publish: <json> is not JSON: ${(error as Error).message}`);
  }
  const reader = app.subscribers().find((s) => s.topic === topic);
  if (reader !== undefined) {
    try {
      reader.decode(new TextEncoder().encode(json));
    } catch (error) {
      throw new CliError(EXIT.usage, `publish: subscriber "${reader.name}" would not take it: ${oneLine(error)}`);
    }
  }
  const broker = app.brokers()[0];
  if (broker === undefined) throw new CliError(EXIT.failed, `publish: App "${app.name}" is mounted on no broker`);
  if (broker.kind === 'memory')
    process.stderr.write('sluice publish: the app uses a memory broker; the message stays in this process\n');
  try {
    await broker.connect({ logger: jsonLogger({ level: 'warn' }).child({ app: app.name }), clock: new SystemClock() });
    await broker.publish(topic, value, {
      ...(options.key !== undefined ? { key: options.key } : {}),
      ...(Object.keys(options.headers).length > 0 ? { headers: options.headers } : {}),
    });
  } catch (error) {
    throw new CliError(EXIT.failed, `publish to "${topic}" failed: ${(error as Error)?.message ?? String(error)}`);
  } finally {
    await broker.close().catch(() => {});
  }
  process.stdout.write(`published to ${topic}\n`);
}

/** `sluice run` (one process): the app until SIGINT or SIGTERM, or until the supervisor that started it goes. */
export async function run(app: App): Promise<void> {
  // Under `--reload` the supervisor's IPC channel is this process's life line: when it goes, stop gracefully.
  // The channel itself must not keep this process alive once the app has stopped.
  if (process.send !== undefined) {
    process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
    process.channel?.unref();
  }
  try {
    await app.run();
  } catch (error) {
    throw new CliError(EXIT.failed, `App "${app.name}" failed: ${(error as Error)?.message ?? String(error)}`);
  }
}

/** An error as one line: a validator's issues as `path: message`, joined; any other error's message. */
function oneLine(error: unknown): string {
  const issues = (error as { issues?: unknown } | null)?.issues;
  if (Array.isArray(issues))
    return issues
      .map((i: { path?: unknown[]; message?: unknown }) => {
        const at = (i.path ?? []).map(String).join('.');
        return at === '' ? String(i.message) : `${at}: ${String(i.message)}`;
      })
      .join('; ');
  return ((error as Error)?.message ?? String(error)).replace(/\s*\n\s*/g, ' ');
}
