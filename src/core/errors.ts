/**
 * Every {@link ErrorCode}, in one array: the closed list of codes a {@link SluiceError} can carry. Every
 * error Sluice throws on purpose is a `SluiceError` whose `code` is one of these; a settings error's
 * message names the subscriber (or app, router, broker), the field and the value.
 *
 * @category Errors
 */
export const ERROR_CODES = [
  'WORKERS_INVALID',
  'CONFIG_INVALID',
  'PACE_UNKNOWN_PART',
  'PACE_BAD_DURATION',
  'UNKNOWN_SUBSCRIBER',
  'DECODE_FAILED',
  'STORE_CORRUPT',
  'STORE_FENCED',
  'SHARD_NOT_OWNED',
  'HANDLER_TIMEOUT',
  'APP_STATE',
  'SEND_INVALID',
  'SEND_TIMEOUT',
  'PUBLISH_REFUSED',
  'TOPIC_MISSING',
  'DEPENDENCY_MISSING',
  'RUNTIME_UNSUPPORTED',
  'MIDDLEWARE_NEXT_TWICE',
  'OUTCOME_INVALID',
  'STARTUP_HOOK_FAILED',
  'SHUTDOWN_HOOK_FAILED',
  'HTTP_LISTEN_FAILED',
  'REQUEST_TIMEOUT',
  'TRANSACTION_FENCED',
] as const;

/**
 * One of {@link ERROR_CODES}: what went wrong, stable across versions (the message is for people).
 *
 * - `WORKERS_INVALID`: `workers` is not a positive integer, or is over {@link MAX_WORKERS}.
 * - `CONFIG_INVALID`: any other bad setting (an unknown option, a value of the wrong kind, settings that
 *   cannot be combined, two subscribers with one name), a bad `MemoryBroker` publish or setting, and
 *   `app.send` to a subscriber without pace.
 * - `PACE_UNKNOWN_PART`: a `pace` part that does not exist.
 * - `PACE_BAD_DURATION`: a {@link Duration} that does not read.
 * - `UNKNOWN_SUBSCRIBER`: `app.send` with a name no subscriber has.
 * - `DECODE_FAILED`: never thrown to your code; a message that does not decode is dead-lettered with a
 *   reason that starts with it.
 * - `STORE_CORRUPT`: a store's files are damaged in a way recovery must not repair (`start()` rejects).
 * - `STORE_FENCED`: a shard log lost its shard to another owner (a Kafka store: another process opened the
 *   shard, and its transactional producer fenced this one's); its pending and later appends are refused, and
 *   none of them is durable.
 * - `SHARD_NOT_OWNED`: `app.send` to a paced subscriber whose store is owned by partition (a Kafka store),
 *   for a key whose partition another instance of the app owns now, or nobody does (a rebalance under way):
 *   the event was not recorded, and the same send may be tried again (on the owner, or later). A store that
 *   routes `app.send` (see `Store.routes`) sends such a start to the owner instead.
 * - `HANDLER_TIMEOUT`: never thrown to your code; a timed-out attempt counts as failed.
 * - `APP_STATE`: a call the app's lifecycle does not allow now (`start()` twice, `withBroker` after
 *   `start()`, `app.send` while not running, changing a router after it was mounted).
 * - `SEND_INVALID`: `app.send` with a bad key, event ID or event (see {@link App.send}); also a record longer
 *   than a shard log takes (64 MiB) handed to a store's `ShardLog.append`.
 * - `SEND_TIMEOUT`: `app.send` routed to the instance that owns the key's partition (a store owned by
 *   partition) got no answer within the app's `sendTimeoutMs`: the event may or may not have been recorded;
 *   sending it again with the same `eventId` is safe (it joins once).
 * - `PUBLISH_REFUSED`: a broker refused a message for good (too large, invalid), so publishing it again
 *   cannot succeed; any other publish error may pass.
 * - `TOPIC_MISSING`: a Kafka subscriber's topic does not exist when it starts (and `createTopics` is off).
 * - `DEPENDENCY_MISSING`: `sluice/kafka` imported where kafkajs, its optional peer dependency, is not
 *   installed (or an app with `metrics` started where prom-client is not); the message names the command
 *   that installs it.
 * - `RUNTIME_UNSUPPORTED`: `sluice/kafka/platformatic` imported on a Node.js its client (@platformatic/kafka) does
 *   not run on (before 22.22, or a Node 24 before 24.6); `sluice/kafka` (kafkajs) runs there.
 * - `MIDDLEWARE_NEXT_TWICE`: a middleware (or a publish middleware) called its `next` a second time: that call
 *   rejects with it and runs nothing more; unless the middleware catches it, its attempt fails (retried, then
 *   dead-lettered) or its publish fails.
 * - `OUTCOME_INVALID`: under middlewares, a handler or a middleware returned something that is neither a
 *   {@link HandlerOutcome} nor nothing: `next()` rejects with it (for the handler's), and the attempt fails.
 * - `STARTUP_HOOK_FAILED`: an `onStartup` or `afterStartup` hook threw (the `cause`): `start()` rejects with
 *   it, having closed what it opened; the app is new again and may be started once fixed.
 * - `SHUTDOWN_HOOK_FAILED`: an `onShutdown` or `afterShutdown` hook threw (the `cause`): the stop went on and
 *   completed, and `stop()` rejects with the first such error.
 * - `HTTP_LISTEN_FAILED`: the app's HTTP server (`http`) could not listen: `http.port` in use by another
 *   process (`EADDRINUSE`), a port the process may not take, a `http.host` the machine does not have. The
 *   message names the app, the port and the host; `start()` rejects with it, having opened nothing.
 * - `REQUEST_TIMEOUT`: `app.request` got no reply within its `timeoutMs`: the request was published (and may
 *   have been handled); a reply that comes later is dropped and counted (`app.requestCounts().late`).
 * - `TRANSACTION_FENCED`: never thrown to your code; an `exactlyOnce` subscriber's partition was opened by
 *   another holder (a rebalance, or this instance stalled past its session): what it had not committed is
 *   dropped here, and the new holder handles it from the offset committed last.
 *
 * @category Errors
 */
export type ErrorCode = (typeof ERROR_CODES)[number];

/**
 * The error Sluice throws: a stable `code`, a precise message and, where there is one, the `cause`.
 *
 * @category Errors
 */
export class SluiceError extends Error {
  /** Always `'SluiceError'`. */
  override readonly name = 'SluiceError';
  /** What went wrong: one of {@link ERROR_CODES}. Test it rather than the message. */
  readonly code: ErrorCode;

  /**
   * Makes an error with a code; Sluice throws these, and a custom {@link Broker} may too (`PUBLISH_REFUSED`).
   *
   * @param code - what went wrong.
   * @param message - who (a subscriber, the app, a broker), which field, and the value that was refused.
   * @param options - `cause`: the error underneath, where there is one (a broker client's error).
   */
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** Renders a user-supplied value for an error message: short, unambiguous, never throws. */
export function show(value: unknown): string {
  try {
    return showUnsafe(value);
  } catch {
    return 'a value that cannot be read';
  }
}

function showUnsafe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return `function ${String(value.name) || '(anonymous)'}`;
  if (typeof value === 'bigint') return `${value}n`;
  if (value === null || typeof value !== 'object') return String(value);
  try {
    const text: string | undefined = JSON.stringify(value);
    if (text === undefined) return Object.prototype.toString.call(value);
    return text.length > 80 ? `${text.slice(0, 77)}...` : text;
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/** The message of anything thrown, for logs and dead-letter headers. Never throws, whatever was thrown. */
export function reasonOf(error: unknown): string {
  try {
    if (error instanceof Error) return String(error.message || error.name);
    return typeof error === 'string' ? error : show(error);
  } catch {
    return 'a value that cannot be read';
  }
}

/**
 * What a thrown value tells, read without throwing: a revoked `Proxy` throws at `instanceof` and at every
 * property read, and a proxy's `get` (or an error's getter) may throw too. `error` is whether it is an
 * `Error`; `name`, `message` and `stack` are strings where it has them; `code` is a SluiceError's;
 * `className` its constructor's name, where it has one.
 */
export interface ThrownView {
  readonly error: boolean;
  readonly name: string;
  readonly message: string;
  readonly stack: string | undefined;
  readonly code: ErrorCode | undefined;
  readonly className: string | undefined;
}

/** Reads `error` as a {@link ThrownView}; never throws. */
export function viewOfThrown(error: unknown): ThrownView {
  const isError = attempt(() => error instanceof Error, false);
  const read = (key: string): unknown => attempt(() => (error as Record<string, unknown>)[key], undefined);
  const text = (key: string): string | undefined => {
    const value = isError ? read(key) : undefined;
    return typeof value === 'string' ? value : undefined;
  };
  const isSluice = attempt(() => error instanceof SluiceError, false);
  const ctor = attempt(() => (error as { constructor?: { name?: unknown } } | null)?.constructor?.name, undefined);
  return {
    error: isError,
    name: text('name') ?? (isError ? 'Error' : typeof error),
    message: isError ? (text('message') ?? '') : reasonOf(error),
    stack: text('stack'),
    code: isSluice ? (read('code') as ErrorCode | undefined) : undefined,
    className: typeof ctor === 'string' && ctor !== '' ? ctor : undefined,
  };
}

function attempt<T, F>(read: () => T, fallback: F): T | F {
  try {
    return read();
  } catch {
    return fallback;
  }
}

/**
 * Whether a broker marked `error` as one that can pass when asked again: kafkajs's `retriable` (a leader
 * moved, a request timed out, a connection dropped, a group coordinator still loading).
 */
export function isRetriable(error: unknown): boolean {
  return (error as { retriable?: unknown } | null | undefined)?.retriable === true;
}
