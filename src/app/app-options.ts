import path from 'node:path';
import { SluiceError, show } from '../core/errors.js';
import type { Clock, Logger, Store } from '../core/ports.js';
import type { SharedOptions } from '../declare/options.js';
import {
  checkTelemetry,
  type HealthOptions,
  type HttpOptions,
  type MetricsOptions,
  type TracingOptions,
} from '../telemetry/telemetry-options.js';

/**
 * Settings of an {@link App}. Checked by the constructor: an unknown key or a bad value throws
 * {@link SluiceError} `CONFIG_INVALID`.
 *
 * @category App
 */
export interface AppOptions {
  /**
   * The app's name: the default consumer group, bound to every log line, and the folder of its default
   * store (`.sluice/<name>`). A non-empty string without NUL; with a paced subscriber and no `store`, a
   * plain folder name (no `/`, `\`, `.` or `..`).
   */
  name: string;
  /** The app's version, written in the `started` log line. @default '0.0.0' */
  version?: string;
  /** What the app does, in a sentence or two: the `info.description` of its AsyncAPI document. */
  description?: string;
  /**
   * The bound of a whole `stop()`, in milliseconds: in-flight deliveries finish within it (then their
   * `ctx.signal` is aborted), and the final commit and closing the brokers get what is left of it. Also
   * how long a rebalance's revoke lets in-flight deliveries finish. A finite number >= 0. @default 30_000
   */
  shutdownTimeoutMs?: number;
  /**
   * Where paced subscribers journal their coordinators. @default `fileStore({ dir: '.sluice/<name>' })` under
   * the working directory, opened only when the app has a paced subscriber
   */
  store?: Store;
  /** The clock every timer of the app runs on; tests pass a {@link ManualClock}. @default `new SystemClock()` */
  clock?: Clock;
  /** Where the app logs. @default {@link jsonLogger}: JSON lines on stderr at `SLUICE_LOG_LEVEL` (default `info`) */
  logger?: Logger;
  /** Defaults for every subscriber of the app (a router's and the subscriber's own settings win). */
  defaults?: SharedOptions;
  /**
   * The most finished-but-uncommittable deliveries per partition (behind one that is still running)
   * before that partition is paused; it resumes when the partition's watermark moves. A positive integer.
   * @default 10_000
   */
  maxUncommitted?: number;
  /**
   * How long `app.send` waits for the answer of the instance that owns the key's partition, when it is
   * another one (a paced subscriber whose store is owned by partition routes the start there): past it, the
   * send rejects with `SEND_TIMEOUT` (the event may or may not have been recorded; sending it again with the
   * same `eventId` is safe). A finite number > 0. @default 30_000
   */
  sendTimeoutMs?: number;
  /**
   * The topic the replies to this app's requests (`app.request`) come back on; every instance reads it in a
   * group of its own. A non-empty string without NUL. @default `<name>.replies`
   */
  replyTopic?: string;
  /**
   * Makes the UUID of each new run ID (`<key>@<uuid>`); tests and the simulator pass a seeded one. @default
   * `crypto.randomUUID`
   */
  randomUUID?: () => string;
  /**
   * Prometheus metrics (`true`: in a registry of the app's own, served by `http`). Loads the optional peer
   * dependency `prom-client` at `start()`. @default off
   */
  metrics?: MetricsOptions | true;
  /** A small HTTP server for health probes (and `/metrics`). @default none */
  http?: HttpOptions;
  /** When the app stops being live. @default `{ maxPollGapMs: 300_000, maxInFlightMs: 300_000 }` */
  health?: HealthOptions;
  /**
   * OpenTelemetry tracing (`true`: with the API's global tracer provider): a span per attempt at a handler,
   * the trace context read from and written to message headers. Loads the optional peer dependency
   * `@opentelemetry/api` at `start()`. @default off
   */
  tracing?: TracingOptions | true;
}

/** Every setting an App takes: any other key is a misspelling. */
const APP_OPTION_NAMES: ReadonlySet<string> = new Set([
  'name',
  'version',
  'description',
  'shutdownTimeoutMs',
  'store',
  'clock',
  'logger',
  'defaults',
  'maxUncommitted',
  'sendTimeoutMs',
  'replyTopic',
  'randomUUID',
  'metrics',
  'http',
  'health',
  'tracing',
]);

/**
 * Checks an App's settings, except `defaults` (checked as subscriber settings): throws `SluiceError`
 * `CONFIG_INVALID` naming the field and the value.
 */
export function checkAppOptions(options: AppOptions): void {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new SluiceError('CONFIG_INVALID', `App: options must be an object, got ${show(options)}`);
  }
  if (typeof options.name !== 'string' || options.name === '' || options.name.includes('\u0000')) {
    throw new SluiceError(
      'CONFIG_INVALID',
      `App: name must be a non-empty string without NUL, got ${show(options.name)}`,
    );
  }
  const who = `App "${options.name}"`;
  for (const field of Object.keys(options)) {
    if (!APP_OPTION_NAMES.has(field)) {
      throw new SluiceError(
        'CONFIG_INVALID',
        `${who}: ${field} must be a known setting (${[...APP_OPTION_NAMES].join(', ')}), got ${show((options as unknown as Record<string, unknown>)[field])}`,
      );
    }
  }
  const bad = (field: string, expected: string): never => {
    throw new SluiceError(
      'CONFIG_INVALID',
      `${who}: ${field} must be ${expected}, got ${show((options as unknown as Record<string, unknown>)[field])}`,
    );
  };
  checkValues(options, bad);
  checkParts(options, bad);
  checkTelemetry(options, (field, expected, value) => {
    throw new SluiceError('CONFIG_INVALID', `${who}: ${field} must be ${expected}, got ${show(value)}`);
  });
}

/** The settings that are values: each of its type and range. */
function checkValues(options: AppOptions, bad: (field: string, expected: string) => never): void {
  if (options.version !== undefined && typeof options.version !== 'string') bad('version', 'a string');
  if (options.description !== undefined && typeof options.description !== 'string') bad('description', 'a string');
  const t = options.shutdownTimeoutMs;
  if (t !== undefined && !(typeof t === 'number' && t >= 0 && Number.isFinite(t)))
    bad('shutdownTimeoutMs', 'a finite number >= 0');
  const st = options.sendTimeoutMs;
  if (st !== undefined && !(typeof st === 'number' && st > 0 && Number.isFinite(st)))
    bad('sendTimeoutMs', 'a finite number > 0');
  const rt = options.replyTopic;
  if (rt !== undefined && !(typeof rt === 'string' && rt !== '' && !rt.includes('\u0000')))
    bad('replyTopic', 'a non-empty string without NUL');
  const m = options.maxUncommitted;
  if (m !== undefined && !(Number.isInteger(m) && m >= 1)) bad('maxUncommitted', 'a positive integer');
}

/** The settings that are parts of the app (a clock, a store, a logger, a UUID source): each of its shape. */
function checkParts(options: AppOptions, bad: (field: string, expected: string) => never): void {
  if (options.clock !== undefined && !hasMethods(options.clock, ['now', 'setTimer']))
    bad('clock', 'a Clock (an object with now() and setTimer())');
  if (
    options.store !== undefined &&
    !(
      hasMethods(options.store, ['open', 'log', 'close']) &&
      Number.isInteger(options.store.shards) &&
      options.store.shards >= 1
    )
  ) {
    bad('store', 'a Store (an object with shards >= 1, open(), log() and close())');
  }
  if (options.logger !== undefined && !hasMethods(options.logger, ['debug', 'info', 'warn', 'error', 'child']))
    bad('logger', 'a Logger (debug, info, warn, error, child)');
  if (options.randomUUID !== undefined && typeof options.randomUUID !== 'function')
    bad('randomUUID', 'a function returning a string');
}

function hasMethods(value: unknown, methods: readonly string[]): boolean {
  return (
    value !== null &&
    typeof value === 'object' &&
    methods.every((m) => typeof (value as Record<string, unknown>)[m] === 'function')
  );
}

/**
 * The default store's folder, `.sluice/<name>` under the working directory. The name must be one plain
 * folder name there: a name that is absolute, or climbs with `..`, would put the store elsewhere.
 */
export function defaultStoreDir(name: string): string {
  const root = path.resolve('.sluice');
  const dir = path.resolve(root, name);
  // eslint-disable-next-line no-control-regex -- NUL is one of the characters a folder name cannot hold
  if (name === '.' || name === '..' || /[/\\\u0000]/.test(name) || path.dirname(dir) !== root) {
    throw new SluiceError(
      'CONFIG_INVALID',
      `App "${name}": name must be a plain folder name (no "/", "\\", "." or "..") for the default store at .sluice/<name>, got ${show(name)}; rename the app or give it a store`,
    );
  }
  return dir;
}
