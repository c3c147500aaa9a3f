import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** The largest body an action takes: its JSON is a few fields. */
export const BODY_LIMIT = 64 * 1024;

/** What every answer of the console carries: never cached, never framed, never sniffed, no referrer. */
const SAFE_HEADERS: Readonly<Record<string, string>> = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
};

/** The policy of an answer that is not the page: it loads and runs nothing. */
const DATA_POLICY = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/** A refusal of the console's own (not an app's error): the HTTP status, a code and a sentence. */
export class Refusal extends Error {
  /** @param status - the HTTP status; `code`: what the JSON answer's `code` says; `headers`: more to send. */
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

/** Writes `body` with the console's headers; a HEAD answer has the headers only. */
export function sendBody(
  res: ServerResponse,
  status: number,
  type: string,
  body: string,
  headers: Readonly<Record<string, string>> = {},
): void {
  res.writeHead(status, {
    ...SAFE_HEADERS,
    'content-security-policy': DATA_POLICY,
    ...headers,
    'content-type': type,
    'content-length': Buffer.byteLength(body),
  });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}

/**
 * `value` as JSON whose text holds no `<`, `>` or `&` (each written `\u003c` and so on): the same value to a
 * JSON parser, and nothing a browser that sniffed it against the content type could take for markup.
 */
export function jsonText(value: unknown): string {
  return `${JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}\n`;
}

/** Answers `value` as JSON. */
export function sendJson(res: ServerResponse, status: number, value: unknown, headers = {}): void {
  sendBody(res, status, 'application/json; charset=utf-8', jsonText(value), headers);
}

/** Answers a refusal as `{ code, message }`. */
export function sendRefusal(res: ServerResponse, refusal: Refusal): void {
  sendJson(res, refusal.status, { code: refusal.code, message: refusal.message }, refusal.headers);
}

/** Host names that reach this machine only: with the server on loopback, a request must name one. */
const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]']);

/** True for an address (or a name) of this machine only: `localhost`, `127.x.x.x`, `::1`. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}

/**
 * Refuses a request another site made a browser send: one whose `Origin` is present and is not the server's
 * own (`http://<Host>`), or whose `Sec-Fetch-Site` is present and is neither `same-origin` nor `none`. With
 * `loopbackOnly` (the server listens on loopback), also one whose `Host` names something else: a page whose
 * name was made to resolve to 127.0.0.1 (DNS rebinding) sends its own name there.
 */
export function crossSiteRefusal(req: IncomingMessage, loopbackOnly: boolean): Refusal | undefined {
  const host = req.headers.host;
  if (host === undefined || host === '') return new Refusal(403, 'FORBIDDEN', 'the request names no Host');
  if (loopbackOnly) {
    let name: string;
    try {
      name = new URL(`http://${host}`).hostname;
    } catch {
      return new Refusal(403, 'FORBIDDEN', 'the Host header does not read as a host');
    }
    if (!LOOPBACK_NAMES.has(name) && !isLoopback(name))
      return new Refusal(
        403,
        'FORBIDDEN',
        'the console listens on loopback and answers requests for localhost, 127.0.0.1 or [::1] only',
      );
  }
  const origin = req.headers.origin;
  if (origin !== undefined && origin !== `http://${host}`)
    return new Refusal(403, 'FORBIDDEN', 'a request from another origin is refused');
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none')
    return new Refusal(403, 'FORBIDDEN', 'a request from another site is refused');
  return undefined;
}

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/**
 * Refuses an action unless its `authorization` is `Bearer <token>`: 403 when no token is configured (actions
 * are off), 401 when it is missing or wrong. The tokens are compared in constant time, as SHA-256 digests (of
 * equal length whatever the lengths of the tokens).
 */
export function tokenRefusal(req: IncomingMessage, token: string | undefined): Refusal | undefined {
  if (token === undefined)
    return new Refusal(403, 'FORBIDDEN', 'actions are off: set http.console.token to allow them');
  const given = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
  const wrong = new Refusal(401, 'UNAUTHORIZED', 'an action needs authorization: Bearer <http.console.token>', {
    'www-authenticate': 'Bearer realm="sluice console"',
  });
  if (given === undefined) return wrong;
  return timingSafeEqual(digest(given), digest(token)) ? undefined : wrong;
}

/** True when the request says its body is JSON (`application/json`, with any parameters). */
export function isJson(req: IncomingMessage): boolean {
  const type = req.headers['content-type'] ?? '';
  return type.split(';', 1)[0]!.trim().toLowerCase() === 'application/json';
}

/**
 * The request's body as a JSON object. Refuses (413) a body over {@link BODY_LIMIT} (told by its
 * `content-length`, or once that much came: the rest is read and dropped, and the connection closed after
 * the answer), and (400) one that is not a JSON object.
 */
export async function readJsonObject(req: IncomingMessage): Promise<Record<string, unknown>> {
  const tooLarge = new Refusal(413, 'BODY_TOO_LARGE', `a body may hold ${BODY_LIMIT} bytes at most`, {
    connection: 'close',
  });
  if (Number(req.headers['content-length'] ?? 0) > BODY_LIMIT) throw tooLarge;
  const text = await new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= BODY_LIMIT) return void chunks.push(chunk);
      req.off('data', onData).off('end', onEnd);
      req.resume(); // drained, not kept: the socket stays whole for the answer
      reject(tooLarge);
    };
    const onEnd = (): void => resolve(Buffer.concat(chunks).toString('utf8'));
    req.on('data', onData).on('end', onEnd);
    req.once('error', () => reject(new Refusal(400, 'CONFIG_INVALID', 'the body did not arrive whole')));
  });
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Refusal(400, 'CONFIG_INVALID', 'the body must be a JSON object');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new Refusal(400, 'CONFIG_INVALID', 'the body must be a JSON object');
  return value as Record<string, unknown>;
}
