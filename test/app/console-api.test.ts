/**
 * The console over HTTP (`http.console`): the page and its headers, every view and action of the JSON API,
 * the token, the refusals of cross-site requests, the errors as statuses, and the option's checks.
 */
import { createHash } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleRoutes, type ConsoleTarget } from '../../src/app/console/console-routes.js';
import { HttpServer } from '../../src/telemetry/http-server.js';
import { App, SluiceError, silentLogger, type Logger } from '../../src/index.js';
import { consoleApp, HOSTILE, type ConsoleFixture } from './console-fixture.js';

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  body: Record<string, unknown> & { code?: string; message?: string };
}

/** `path` of the server on `port`, by fetch. */
async function call(port: number, path: string, init: RequestInit = {}): Promise<Answer> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, init);
  const text = await res.text();
  const json = res.headers.get('content-type')?.startsWith('application/json') === true && text !== '';
  return { status: res.status, headers: res.headers, text, body: json ? JSON.parse(text) : {} };
}

/** An action: a JSON POST with token `t` unless `headers` say otherwise. */
const post = (port: number, action: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> =>
  call(port, `/console/api/${action}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer t', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

/** A GET by node:http, whose `Host` a test may set (fetch sends its own). */
function getWithHost(port: number, path: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject).end();
  });
}

describe('the console option', () => {
  it.each([
    [{ tokn: 'x' }, /http\.console\.tokn must be a known setting \(token\), got "x"/],
    [{ token: '' }, /http\.console\.token must be a non-empty string, got ""/],
    [{ token: 42 }, /http\.console\.token must be a non-empty string, got 42/],
    ['yes', /http\.console must be an object \{ token\? \}, got "yes"/],
    [null, /http\.console must be an object \{ token\? \}, got null/],
  ])('refuses http.console %j at construction', (console, message) => {
    const make = () => new App({ name: 'a', logger: silentLogger, http: { port: 0, console: console as never } });
    expect(make).toThrow(SluiceError);
    expect(make).toThrow(message);
    try {
      make();
    } catch (error) {
      expect((error as SluiceError).code).toBe('CONFIG_INVALID');
    }
  });

  it('without http.console, nothing under /console exists', async () => {
    const { app } = consoleApp({ port: 0, host: '127.0.0.1' });
    await app.start();
    const port = app.httpPort()!;
    for (const path of ['/console', '/console/', '/console/api/inspect', '/console/api/runs?subscriber=reindex'])
      expect((await call(port, path)).status).toBe(404);
    expect((await post(port, 'pause', { subscriber: 'reindex' })).status).toBe(404);
    expect((await call(port, '/health/live')).status).toBe(200);
    await app.stop();
  });

  it('listens on 127.0.0.1 only with http.console and no http.host; on every address without it', async () => {
    const other = Object.values(networkInterfaces())
      .flat()
      .find((a) => a !== undefined && a.family === 'IPv4' && !a.internal)?.address;
    for (const withConsole of [true, false]) {
      const { app } = consoleApp({ port: 0, ...(withConsole ? { console: {} } : {}) });
      await app.start();
      const port = app.httpPort()!;
      expect((await call(port, '/health/live')).status).toBe(200);
      if (other !== undefined) {
        const outside = fetch(`http://${other}:${port}/health/live`).then((r) => r.status);
        if (withConsole) await expect(outside).rejects.toThrow();
        else await expect(outside).resolves.toBe(200);
      }
      await app.stop();
    }
  });
});

describe('the console', () => {
  let fx: ConsoleFixture;
  let port: number;

  beforeAll(async () => {
    fx = consoleApp({ port: 0, console: { token: 't' } });
    await fx.app.start();
    port = fx.app.httpPort()!;
  });
  afterAll(() => fx.app.stop());

  it('serves one self-contained page with a strict policy and safe headers', async () => {
    const { status, headers, text } = await call(port, '/console');
    expect(status).toBe(200);
    expect(headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(headers.get('x-frame-options')).toBe('DENY');
    expect(headers.get('x-content-type-options')).toBe('nosniff');
    expect(headers.get('referrer-policy')).toBe('no-referrer');
    expect(headers.get('cache-control')).toBe('no-store');
    const policy = headers.get('content-security-policy')!;
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain("connect-src 'self'");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).toContain("require-trusted-types-for 'script'");
    expect(policy).not.toContain('unsafe-inline');
    // The one script and the one style are allowed by their hashes, and nothing is loaded from elsewhere.
    const hash = (s: string) => `'sha256-${createHash('sha256').update(s).digest('base64')}'`;
    const script = /<script>([\s\S]*)<\/script>/.exec(text)![1]!;
    const style = /<style>([\s\S]*)<\/style>/.exec(text)![1]!;
    expect(policy).toContain(`script-src ${hash(script)}`);
    expect(policy).toContain(`style-src ${hash(style)}`);
    expect(text.match(/<script/g)).toHaveLength(1);
    expect(text).not.toMatch(/\s(src|href)=/);
    expect(text).not.toMatch(/\son[a-z]+=/); // no inline handlers: the policy would refuse them
    expect(script).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
    const head = await call(port, '/console', { method: 'HEAD' });
    expect([head.status, head.text]).toEqual([200, '']);
    expect((await call(port, '/console/')).status).toBe(200);
  });

  it('answers GET inspect with every subscriber, names JSON-escaped, and what the console allows', async () => {
    const { status, headers, text, body } = await call(port, '/console/api/inspect');
    expect(status).toBe(200);
    expect(headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(headers.get('x-content-type-options')).toBe('nosniff');
    expect(headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(text).not.toContain('<');
    expect(text).toContain('\\u003cimg src=x onerror=');
    const subs = body.subscribers as { name: string; pace?: { kind: string }; deadLetterTopic: string | false }[];
    expect(subs.map((s) => s.name)).toEqual(['reindex', 'orders', HOSTILE]);
    expect(subs[0]!.pace?.kind).toBe('debounce');
    expect(subs[1]!.deadLetterTopic).toBe('orders.dlq');
    expect(body.app).toBe('shop');
    expect(body.console).toEqual({ actions: true });
  });

  it('pages runs, looks up a key, and refuses a bad query or subscriber with 400 and 404', async () => {
    for (const key of ['a', 'b', 'c', HOSTILE]) await fx.app.send('reindex', { key, event: { n: 1 } });
    const first = await call(port, '/console/api/runs?subscriber=reindex&stage=gathering&limit=2');
    expect(first.status).toBe(200);
    const runs = first.body.runs as { key: string; shard: number }[];
    expect(runs).toHaveLength(2);
    expect(first.text).not.toContain('<');
    const rest = await call(
      port,
      `/console/api/runs?subscriber=reindex&stage=gathering&after=${encodeURIComponent(first.body.next as string)}`,
    );
    const keys = [...runs, ...(rest.body.runs as { key: string }[])].map((r) => r.key);
    expect(keys.sort()).toEqual([HOSTILE, 'a', 'b', 'c'].sort());
    const shard = runs[0]!.shard;
    const one = await call(port, `/console/api/runs?subscriber=reindex&shard=${shard}&limit=100`);
    expect((one.body.runs as { shard: number }[]).every((r) => r.shard === shard)).toBe(true);
    const key = await call(port, `/console/api/key?subscriber=reindex&key=${encodeURIComponent(HOSTILE)}`);
    expect((key.body.key as { key: string; runs: unknown[] }).key).toBe(HOSTILE);
    expect((await call(port, '/console/api/key?subscriber=reindex&key=nobody')).body).toEqual({ key: null });

    const limit = await call(port, '/console/api/runs?subscriber=reindex&limit=many');
    expect([limit.status, limit.body.code]).toEqual([400, 'CONFIG_INVALID']);
    expect(limit.body.message).toBe('App "shop": console runs: limit must be an integer, got "many"');
    const stage = await call(port, '/console/api/runs?subscriber=reindex&stage=done');
    expect([stage.status, stage.body.code]).toEqual([400, 'CONFIG_INVALID']);
    expect((await call(port, '/console/api/runs')).body.message).toMatch(/subscriber must be given/);
    expect((await call(port, '/console/api/key?subscriber=reindex')).status).toBe(400);
    const unknown = await call(port, '/console/api/runs?subscriber=nobody');
    expect([unknown.status, unknown.body.code]).toEqual([404, 'UNKNOWN_SUBSCRIBER']);
    const plain = await call(port, '/console/api/runs?subscriber=orders');
    expect([plain.status, plain.body.code]).toEqual([400, 'CONFIG_INVALID']);
  });

  it('takes actions only with the token, as JSON, from its own origin', async () => {
    const pause = { subscriber: 'reindex' };
    const refused = [
      await post(port, 'pause', pause, { authorization: '' }),
      await post(port, 'pause', pause, { authorization: 'Bearer wrong' }),
      await post(port, 'pause', pause, { authorization: 'Bearer tt' }),
      await post(port, 'pause', pause, { authorization: 'Basic t' }),
    ];
    expect(refused.map((r) => [r.status, r.body.code])).toEqual(Array(4).fill([401, 'UNAUTHORIZED']));
    expect(refused[0]!.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const text = await post(port, 'pause', JSON.stringify(pause), { 'content-type': 'text/plain' });
    expect([text.status, text.body.code]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE']);
    const form = await post(port, 'pause', 'subscriber=reindex', {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(form.status).toBe(415);
    const origin = await post(port, 'pause', pause, { origin: 'http://evil.example' });
    expect([origin.status, origin.body.code]).toEqual([403, 'FORBIDDEN']);
    expect((await post(port, 'pause', pause, { origin: 'null' })).status).toBe(403);
    expect((await post(port, 'pause', pause, { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await post(port, 'pause', pause, { 'sec-fetch-site': 'same-site' })).status).toBe(403);
    expect((await call(port, '/console/api/inspect', { headers: { origin: 'http://evil.example' } })).status).toBe(403);
    expect(await getWithHost(port, '/console/api/inspect', 'evil.example')).toBe(403); // DNS rebinding
    expect(await getWithHost(port, '/console/api/inspect', `localhost:${port}`)).toBe(200);
    expect((await fx.app.inspect()).subscribers[0]!.pace?.paused).toBe(false); // none of those paused

    const paused = await post(port, 'pause', pause, {
      origin: `http://127.0.0.1:${port}`,
      'sec-fetch-site': 'same-origin',
    });
    expect([paused.status, paused.body]).toEqual([200, { shards: [0, 1, 2, 3] }]); // the memory store's 4
    expect((await fx.app.inspect()).subscribers[0]!.pace?.paused).toBe(true);
    expect((await post(port, 'pause', pause)).body).toEqual({ shards: [] });
    expect((await post(port, 'resume', pause, { 'content-type': 'application/json; charset=utf-8' })).body).toEqual({
      shards: [0, 1, 2, 3],
    });
    expect((await fx.app.inspect()).subscribers[0]!.pace?.paused).toBe(false);
  });

  it('cancels a run by its ID, and tells bad bodies, unknown paths and methods apart', async () => {
    const receipt = await fx.app.send('reindex', { key: 'to-cancel', event: { n: 2 } });
    const runId = (receipt as { runId: string }).runId;
    expect((await post(port, 'cancel', { subscriber: 'reindex', runId })).body).toEqual({ cancelled: 'window' });
    expect((await post(port, 'cancel', { subscriber: 'reindex', runId })).body).toEqual({ cancelled: null });
    const missing = await post(port, 'cancel', { subscriber: 'reindex' });
    expect([missing.status, missing.body.message]).toEqual([
      400,
      'App "shop": console cancel: runId must be a non-empty string, got undefined',
    ]);
    const extra = await post(port, 'pause', { subscriber: 'reindex', shard: 1 });
    expect([extra.status, extra.body.message]).toEqual([
      400,
      'App "shop": console pause: shard must be one of subscriber, got 1',
    ]);
    expect((await post(port, 'pause', '{nope')).body).toMatchObject({ code: 'CONFIG_INVALID' });
    expect((await post(port, 'pause', '[1]')).status).toBe(400);
    const big = await post(port, 'pause', JSON.stringify({ subscriber: 'reindex', pad: 'x'.repeat(70_000) }));
    expect([big.status, big.body.code]).toEqual([413, 'BODY_TOO_LARGE']);
    expect((await post(port, 'pause', { subscriber: 'nobody' })).status).toBe(404);
    expect((await post(port, 'pause', { subscriber: 'orders' })).status).toBe(400);

    expect((await call(port, '/console/api/pause')).status).toBe(405);
    expect((await call(port, '/console/api/pause')).headers.get('allow')).toBe('POST');
    const put = await call(port, '/console/api/inspect', { method: 'PUT' });
    expect([put.status, put.headers.get('allow')]).toEqual([405, 'GET, HEAD']);
    expect((await call(port, '/console', { method: 'POST' })).status).toBe(405);
    expect((await call(port, '/console/api/nothing')).status).toBe(404);
    expect((await call(port, '/console/api/constructor')).status).toBe(404);
    expect((await call(port, '/consoles')).status).toBe(404);
  });

  it('lists dead letters by page and replays them once', async () => {
    for (let n = 1; n <= 6; n++) await fx.broker.publish('orders', { n });
    await fx.app.idle();
    expect(fx.handled).toEqual([1, 3, 5]);
    const first = await call(port, '/console/api/dead-letters?subscriber=orders&limit=2');
    expect(first.status).toBe(200);
    const letters = first.body.letters as { reason: string; value: string; replayed: boolean; sourceTopic: string }[];
    expect(letters.map((l) => [l.reason, l.value, l.replayed, l.sourceTopic])).toEqual([
      [expect.stringContaining('even: 2'), '{"n":2}', false, 'orders'],
      [expect.stringContaining('even: 4'), '{"n":4}', false, 'orders'],
    ]);
    const next = encodeURIComponent(first.body.next as string);
    const rest = await call(port, `/console/api/dead-letters?subscriber=orders&after=${next}&partition=0`);
    expect((rest.body.letters as unknown[]).length).toBe(1);
    expect((await call(port, '/console/api/dead-letters?subscriber=orders&partition=x')).status).toBe(400);

    fx.rejecting.on = false;
    const replay = await post(port, 'replay', { subscriber: 'orders', partition: '0', fromOffset: '0', limit: 10 });
    expect(replay.body).toEqual({ replayed: 3, skipped: 0, unreplayable: 0, scanned: 3 });
    await fx.app.idle();
    expect(fx.handled).toEqual([1, 3, 5, 2, 4, 6]);
    expect((await post(port, 'replay', { subscriber: 'orders' })).body).toMatchObject({ replayed: 0, skipped: 3 });
    const bad = await post(port, 'replay', { subscriber: 'orders', fromOffset: '-1' });
    expect([bad.status, bad.body.message]).toEqual([
      400,
      'App "shop": console replay: fromOffset must be an offset (a decimal string), got "-1"',
    ]);
  });
});

describe('the console without a token, and its errors', () => {
  it('shows, and refuses every action with 403 naming http.console.token', async () => {
    const { app } = consoleApp({ port: 0, console: {} });
    await app.start();
    const port = app.httpPort()!;
    expect((await call(port, '/console/api/inspect')).body.console).toMatchObject({ actions: false });
    const refused = await post(port, 'pause', { subscriber: 'reindex' });
    expect([refused.status, refused.body.message]).toEqual([
      403,
      'actions are off: set http.console.token to allow them',
    ]);
    await app.stop();
  });

  it('answers an app error by its code (409 for APP_STATE and SHARD_NOT_OWNED), anything else 500, logged', async () => {
    const logged: unknown[] = [];
    const log = { ...silentLogger, error: (...args: unknown[]) => void logged.push(args) } as Logger;
    let thrown: unknown;
    const target = {
      name: 'fake',
      log,
      inspect: async () => {
        throw thrown;
      },
    } as unknown as ConsoleTarget;
    const server = new HttpServer({
      health: async () => ({ status: 'ready', live: true, ready: true, reasons: [], subscribers: [] }),
      registry: () => undefined,
      log,
      routes: consoleRoutes(target, { port: 0, console: {} }),
    });
    await server.listen(0, '127.0.0.1');
    const statusOf = async (error: unknown) => {
      thrown = error;
      return call(server.port!, '/console/api/inspect');
    };
    expect((await statusOf(new SluiceError('APP_STATE', 'not running'))).status).toBe(409);
    expect((await statusOf(new SluiceError('SHARD_NOT_OWNED', 'elsewhere'))).status).toBe(409);
    expect((await statusOf(new SluiceError('SEND_INVALID', 'bad'))).body).toEqual({
      code: 'SEND_INVALID',
      message: 'bad',
    });
    expect(logged).toHaveLength(0);
    const internal = await statusOf(new Error('secret detail'));
    expect([internal.status, internal.body.code]).toEqual([500, 'INTERNAL']);
    expect(internal.text).not.toContain('secret detail');
    expect((await statusOf(new SluiceError('STORE_CORRUPT', 'torn'))).status).toBe(500);
    expect(logged).toHaveLength(2);
    await server.close();
  });
});
