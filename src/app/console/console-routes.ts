import type { IncomingMessage, ServerResponse } from 'node:http';
import { SluiceError, show, type ErrorCode } from '../../core/errors.js';
import type { Logger } from '../../core/ports.js';
import type { HttpRoute } from '../../telemetry/http-server.js';
import type { HttpOptions } from '../../telemetry/telemetry-options.js';
import type { AppControl } from '../app-control.js';
import {
  crossSiteRefusal,
  isJson,
  isLoopback,
  readJsonObject,
  Refusal,
  sendBody,
  sendJson,
  sendRefusal,
  tokenRefusal,
} from './console-http.js';
import { CONSOLE_PAGE, PAGE_POLICY } from './console-page.js';

/** What the console calls of its app: the inspection and the actions of {@link AppControl}. */
export interface ConsoleTarget extends Pick<
  AppControl,
  'inspect' | 'inspectRuns' | 'inspectKey' | 'inspectDeadLetters' | 'pause' | 'resume' | 'cancel' | 'replayDeadLetters'
> {
  /** The app's name, for the console's errors. */
  readonly name: string;
  /** Where a request that failed for an unexpected reason is logged. */
  readonly log: Logger;
}

/** How the console was set up. */
interface ConsoleSettings {
  /** `http.console.token`: without it, actions are refused. */
  readonly token: string | undefined;
  /** The server listens on loopback: requests must name a loopback host. */
  readonly loopbackOnly: boolean;
}

/** The HTTP status of an app's error, by its code; any other is a 500, logged. */
const STATUS: Partial<Record<ErrorCode, number>> = {
  UNKNOWN_SUBSCRIBER: 404,
  CONFIG_INVALID: 400,
  SEND_INVALID: 400,
  APP_STATE: 409,
  SHARD_NOT_OWNED: 409,
  SEND_TIMEOUT: 504, // another instance, asked for its shards, did not answer in time
};

const API = '/console/api/';

/** The console's routes for an app with `http.console`, or none. */
export function consoleRoutes(target: ConsoleTarget, http: HttpOptions | undefined): readonly HttpRoute[] {
  const options = http?.console;
  if (http === undefined || options === undefined) return [];
  const settings: ConsoleSettings = {
    token: options.token,
    loopbackOnly: http.host === undefined || isLoopback(http.host),
  };
  return [{ prefix: '/console', answer: (req, res, path) => answer(target, settings, req, res, path) }];
}

/** A bad parameter of a request, as the app's settings errors say one: who, which field, what value. */
function invalid(t: ConsoleTarget, where: string, field: string, expected: string, value: unknown): SluiceError {
  return new SluiceError(
    'CONFIG_INVALID',
    `App "${t.name}": console ${where}: ${field} must be ${expected}, got ${show(value)}`,
  );
}

/** A query parameter: its text, or undefined when absent; `required` ones must be there. */
function param(
  t: ConsoleTarget,
  q: URLSearchParams,
  where: string,
  name: string,
  required = false,
): string | undefined {
  const v = q.get(name) ?? undefined;
  if (required && (v === undefined || v === '')) throw invalid(t, where, name, 'given', v);
  return v === '' && !required ? undefined : v;
}

/** An integer query parameter, or undefined when absent. */
function intParam(t: ConsoleTarget, q: URLSearchParams, where: string, name: string): number | undefined {
  const v = param(t, q, where, name);
  if (v === undefined) return undefined;
  if (!/^-?\d{1,15}$/.test(v)) throw invalid(t, where, name, 'an integer', v);
  return Number(v);
}

type View = (t: ConsoleTarget, q: URLSearchParams, s: ConsoleSettings) => Promise<unknown>;

/** The GET routes under /console/api/. */
const VIEWS = new Map<string, View>([
  ['inspect', async (t, _q, s) => ({ ...(await t.inspect()), console: { actions: s.token !== undefined } })],
  [
    'runs',
    async (t, q) => {
      const stage = param(t, q, 'runs', 'stage') as 'gathering' | 'waiting' | 'running' | undefined;
      const after = param(t, q, 'runs', 'after');
      const limit = intParam(t, q, 'runs', 'limit');
      const shard = intParam(t, q, 'runs', 'shard');
      return t.inspectRuns(param(t, q, 'runs', 'subscriber', true)!, {
        ...(stage !== undefined ? { stage } : {}),
        ...(after !== undefined ? { after } : {}),
        ...(limit !== undefined ? { limit } : {}),
        ...(shard !== undefined ? { shard } : {}),
      });
    },
  ],
  [
    'key',
    async (t, q) => {
      const key = q.get('key');
      if (key === null) throw invalid(t, 'key', 'key', 'given', undefined);
      return { key: (await t.inspectKey(param(t, q, 'key', 'subscriber', true)!, key)) ?? null };
    },
  ],
  [
    'dead-letters',
    async (t, q) => {
      const partition = intParam(t, q, 'dead-letters', 'partition');
      const after = param(t, q, 'dead-letters', 'after');
      const limit = intParam(t, q, 'dead-letters', 'limit');
      return t.inspectDeadLetters(param(t, q, 'dead-letters', 'subscriber', true)!, {
        ...(partition !== undefined ? { partition } : {}),
        ...(after !== undefined ? { after } : {}),
        ...(limit !== undefined ? { limit } : {}),
      });
    },
  ],
]);

type Body = Record<string, unknown>;
type Action = (t: ConsoleTarget, body: Body) => Promise<unknown>;

/** The body's fields, each checked against the action's `known` ones; `subscriber` must be a non-empty string. */
function fields(t: ConsoleTarget, where: string, body: Body, known: readonly string[]): string {
  for (const k of Object.keys(body))
    if (!known.includes(k)) throw invalid(t, where, k, `one of ${known.join(', ')}`, body[k]);
  const s = body.subscriber;
  if (typeof s !== 'string' || s === '') throw invalid(t, where, 'subscriber', 'a non-empty string', s);
  return s;
}

/** An optional integer field of a body. */
function intField(t: ConsoleTarget, where: string, body: Body, name: string): number | undefined {
  const v = body[name];
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  if (typeof v === 'string' && /^-?\d{1,15}$/.test(v)) return Number(v);
  throw invalid(t, where, name, 'an integer', v);
}

/** An optional offset field of a body: a decimal string (or an integer), passed on as a string. */
function offsetField(t: ConsoleTarget, where: string, body: Body, name: string): string | undefined {
  const v = body[name];
  if (v === undefined || v === null || v === '') return undefined;
  if ((typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) || (typeof v === 'string' && /^\d+$/.test(v)))
    return String(v);
  throw invalid(t, where, name, 'an offset (a decimal string)', v);
}

/** The POST routes under /console/api/: each needs the token. */
const ACTIONS = new Map<string, Action>([
  ['pause', async (t, b) => ({ shards: await t.pause(fields(t, 'pause', b, ['subscriber'])) })],
  ['resume', async (t, b) => ({ shards: await t.resume(fields(t, 'resume', b, ['subscriber'])) })],
  [
    'cancel',
    async (t, b) => {
      const subscriber = fields(t, 'cancel', b, ['subscriber', 'runId']);
      if (typeof b.runId !== 'string' || b.runId === '')
        throw invalid(t, 'cancel', 'runId', 'a non-empty string', b.runId);
      return { cancelled: await t.cancel(subscriber, b.runId) };
    },
  ],
  [
    'replay',
    async (t, b) => {
      const w = 'replay';
      const subscriber = fields(t, w, b, ['subscriber', 'partition', 'fromOffset', 'toOffset', 'limit']);
      const partition = intField(t, w, b, 'partition');
      const fromOffset = offsetField(t, w, b, 'fromOffset');
      const toOffset = offsetField(t, w, b, 'toOffset');
      const limit = intField(t, w, b, 'limit');
      const r = await t.replayDeadLetters(subscriber, {
        ...(partition !== undefined ? { partition } : {}),
        ...(fromOffset !== undefined ? { fromOffset } : {}),
        ...(toOffset !== undefined ? { toOffset } : {}),
        ...(limit !== undefined ? { limit } : {}),
      });
      return { replayed: r.replayed, skipped: r.skipped, unreplayable: r.unreplayable, scanned: r.scanned };
    },
  ],
]);

const notAllowed = (allow: string): Refusal =>
  new Refusal(405, 'METHOD_NOT_ALLOWED', `this path takes ${allow}`, { allow });

/**
 * Answers one request under /console: refuses it when another site sent it; serves the page and the views
 * to GET and HEAD, and the actions to POST with a JSON body and the token.
 */
async function answer(
  t: ConsoleTarget,
  s: ConsoleSettings,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
): Promise<void> {
  try {
    const refused = crossSiteRefusal(req, s.loopbackOnly);
    if (refused !== undefined) throw refused;
    const viewing = req.method === 'GET' || req.method === 'HEAD';
    if (path === '/console' || path === '/console/') {
      if (!viewing) throw notAllowed('GET, HEAD');
      return sendBody(res, 200, 'text/html; charset=utf-8', CONSOLE_PAGE, { 'content-security-policy': PAGE_POLICY });
    }
    const name = path.startsWith(API) ? path.slice(API.length) : '';
    const view = VIEWS.get(name);
    if (view !== undefined) {
      if (!viewing) throw notAllowed('GET, HEAD');
      const query = new URL(req.url ?? '/', 'http://console').searchParams;
      return sendJson(res, 200, await view(t, query, s));
    }
    const action = ACTIONS.get(name);
    if (action === undefined) throw new Refusal(404, 'NOT_FOUND', 'the console has no such path');
    if (req.method !== 'POST') throw notAllowed('POST');
    if (!isJson(req))
      throw new Refusal(415, 'UNSUPPORTED_MEDIA_TYPE', 'an action takes content-type: application/json');
    const unauthorized = tokenRefusal(req, s.token);
    if (unauthorized !== undefined) throw unauthorized;
    return sendJson(res, 200, await action(t, await readJsonObject(req)));
  } catch (error) {
    answerError(t, res, path, error);
  }
}

/** Answers what a request failed with: a refusal or an app's error as its status says; anything else 500, logged. */
function answerError(t: ConsoleTarget, res: ServerResponse, path: string, error: unknown): void {
  if (res.headersSent) return void res.end();
  if (error instanceof Refusal) return sendRefusal(res, error);
  const status = error instanceof SluiceError ? STATUS[error.code] : undefined;
  if (error instanceof SluiceError && status !== undefined)
    return sendJson(res, status, { code: error.code, message: error.message });
  t.log.error('console: a request failed', { path, error });
  sendJson(
    res,
    500,
    error instanceof SluiceError
      ? { code: error.code, message: error.message }
      : { code: 'INTERNAL', message: 'the request failed; the app logged why' },
  );
}
