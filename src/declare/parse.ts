/**
 * The settings parsers: each input shape is read once, where it is given, into the form the rest of
 * declare/ uses — a subscriber's options (decorator, builder) by {@link parseOptions}, a router's by
 * {@link parseRouterOptions}, the app's `defaults` by {@link parseDefaults}. What no single layer can check
 * (a backoff whose ends come from two layers, a router's `byKey` under a subscriber's `batch`) is checked
 * when they are merged, in compile.ts.
 */
import { SluiceError, show } from '../core/errors.js';
import { checkName, fail, fields, isDecoder, nonNegative, positiveInt } from './checks.js';
import {
  OPTION_NAMES,
  SHARED_OPTION_NAMES,
  type RetryOptions,
  type RouterOptions,
  type SharedOptions,
  type SubscriberOptions,
} from './options.js';
import { parsePace, type CompiledPace } from './pace.js';
import { Topic } from './topic.js';

/**
 * The most workers (or lanes) a subscriber may have, 10,000: each is a long-lived slot, made at start. More
 * throws {@link SluiceError} `WORKERS_INVALID`.
 *
 * @category Subscribers
 */
export const MAX_WORKERS = 10_000;

/** A subscriber's own settings, parsed. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- so a handler's own payload type is taken as is
export interface ParsedOptions<T = any> {
  /**
   * The settings as given, checked, and copied and frozen at every level (functions and decoders are kept by
   * reference), so changing the caller's object afterwards changes nothing.
   */
  readonly options: Readonly<SubscriberOptions<T>>;
  /** Its `pace`, parsed; `undefined` for an unpaced subscriber. */
  readonly pace: CompiledPace | undefined;
}

/**
 * Parses a subscriber's settings (the decorator's options, or what the builder gathered). `who` names the
 * owner in errors, e.g. `subscriber "Billing.bill"`. Throws `SluiceError` naming the field and the value.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- so a handler's own payload type is taken as is
export function parseOptions<T = any>(raw: SubscriberOptions<T>, who: string): ParsedOptions<T> {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    fail('CONFIG_INVALID', who, 'options', raw, 'an object');
  for (const [field, value] of Object.entries(raw)) {
    if (!OPTION_NAMES.has(field))
      fail('CONFIG_INVALID', who, field, value, `a known setting (${[...OPTION_NAMES].join(', ')})`);
  }
  const o: SubscriberOptions<T> = { ...raw };
  if (o.name !== undefined) checkName(who, o.name);
  if (o.workers !== undefined) {
    positiveInt('WORKERS_INVALID', who, 'workers', o.workers);
    if (o.workers > MAX_WORKERS) fail('WORKERS_INVALID', who, 'workers', o.workers, `at most ${MAX_WORKERS}`);
  }
  if (o.byKey !== undefined && typeof o.byKey !== 'boolean')
    fail('CONFIG_INVALID', who, 'byKey', o.byKey, 'true or false');
  if (o.key !== undefined && typeof o.key !== 'function')
    fail('CONFIG_INVALID', who, 'key', o.key, 'a function (message) => string | undefined');
  if (o.group !== undefined && !(typeof o.group === 'string' && o.group !== '' && !o.group.includes('\u0000')))
    fail('CONFIG_INVALID', who, 'group', o.group, 'a non-empty string without NUL');
  if (o.decode !== undefined && !isDecoder(o.decode))
    fail('CONFIG_INVALID', who, 'decode', o.decode, 'a function, an object with parse(), or a Standard Schema');
  if (o.batch !== undefined) o.batch = parseBatch(o.batch, who);
  if (o.retry !== undefined) o.retry = parseRetry(o.retry, who);
  if (
    o.deadLetter !== undefined &&
    o.deadLetter !== false &&
    !(typeof o.deadLetter === 'string' && o.deadLetter !== '')
  )
    fail('CONFIG_INVALID', who, 'deadLetter', o.deadLetter, 'a topic name or false');
  if (o.timeoutMs !== undefined && !(Number.isFinite(o.timeoutMs) && o.timeoutMs > 0))
    fail('CONFIG_INVALID', who, 'timeoutMs', o.timeoutMs, 'a positive number of milliseconds');
  if (o.use !== undefined) o.use = parseUse(o.use, who);
  if (o.publishTo !== undefined) o.publishTo = parsePublishTo(o.publishTo, who);
  if (o.replies !== undefined && typeof o.replies !== 'boolean')
    fail('CONFIG_INVALID', who, 'replies', o.replies, 'true or false');
  if (o.exactlyOnce !== undefined && typeof o.exactlyOnce !== 'boolean')
    fail('CONFIG_INVALID', who, 'exactlyOnce', o.exactlyOnce, 'true or false');
  const pace = o.pace === undefined ? undefined : parsePace(o.pace, who);
  if (o.pace !== undefined) o.pace = frozenPace(o.pace);
  if (o.byKey === true && o.batch !== undefined)
    fail(
      'CONFIG_INVALID',
      who,
      'batch',
      o.batch,
      'left out when byKey is set (a batch spans keys; use pace.batch for per-key batches)',
    );
  if (pace !== undefined && o.batch !== undefined) {
    throw new SluiceError(
      'CONFIG_INVALID',
      `${who}: batch must not be combined with pace (a paced run is one key's; use pace.batch), got batch ${show(o.batch)}`,
    );
  }
  if (o.replies === true && (pace !== undefined || o.batch !== undefined))
    fail('CONFIG_INVALID', who, 'replies', o.replies, 'left out with batch and pace (a reply answers one request)');
  if (o.exactlyOnce === true && o.batch !== undefined)
    fail(
      'CONFIG_INVALID',
      who,
      'exactlyOnce',
      o.exactlyOnce,
      "left out with batch (a transaction holds one input partition; pace's batch rule can take it)",
    );
  return { options: Object.freeze(o), pace };
}

/** Topics to publish on: an array of `topic(...)`s, each once, copied and frozen. */
function parsePublishTo(raw: unknown, who: string): readonly Topic[] {
  if (!Array.isArray(raw)) fail('CONFIG_INVALID', who, 'publishTo', raw, 'an array of topics made by topic()');
  const list = raw as unknown[];
  list.forEach((t, i) => {
    if (!(t instanceof Topic)) fail('CONFIG_INVALID', who, `publishTo[${i}]`, t, 'a topic made by topic()');
    if (list.findIndex((u) => (u as Topic).name === t.name) !== i)
      fail('CONFIG_INVALID', who, `publishTo[${i}]`, t.name, 'a topic not given twice');
  });
  return Object.freeze([...(list as Topic[])]);
}

/**
 * Parses the defaults given to everything an app includes (its `defaults`): only the settings a router may
 * give (`SHARED_OPTION_NAMES`), each read as a subscriber's. Returns a copy frozen at every level.
 */
export function parseDefaults(raw: unknown, who: string): Readonly<SharedOptions> {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new SluiceError('CONFIG_INVALID', `${who} must be an object, got ${show(raw)}`);
  for (const [field, value] of Object.entries(raw)) {
    if (!SHARED_NAMES.has(field))
      fail('CONFIG_INVALID', who, field, value, `a setting given as a default (${SHARED_OPTION_NAMES.join(', ')})`);
  }
  return parseOptions(raw as SharedOptions, who).options;
}

/** Parses a router's settings: its prefix, and defaults as {@link parseDefaults} reads them. Frozen. */
export function parseRouterOptions(raw: RouterOptions | undefined): Readonly<RouterOptions> {
  const { prefix, use, ...defaults } = raw ?? {};
  const who = `router${prefix ? ` "${prefix}"` : ''}`;
  if (prefix !== undefined && typeof prefix !== 'string')
    throw new SluiceError('CONFIG_INVALID', `${who}: prefix must be a string, got ${show(prefix)}`);
  for (const [field, value] of Object.entries(defaults)) {
    if (!SHARED_NAMES.has(field)) {
      throw new SluiceError(
        'CONFIG_INVALID',
        `${who}: ${field} is not a router setting (prefix, use, ${SHARED_OPTION_NAMES.join(', ')}), got ${show(value)}`,
      );
    }
  }
  return Object.freeze({
    ...parseOptions(defaults, who).options,
    ...(prefix !== undefined ? { prefix } : {}),
    ...(use !== undefined ? { use: parseUse(use, who) } : {}),
  });
}

/** Middlewares: an array of functions, copied and frozen. */
export function parseUse<M>(raw: readonly M[], who: string): readonly M[] {
  const given: unknown = raw;
  if (!Array.isArray(given)) fail('CONFIG_INVALID', who, 'use', given, 'an array of middleware functions');
  const list: readonly M[] = [...raw];
  list.forEach((m: unknown, i) => {
    if (typeof m !== 'function') fail('CONFIG_INVALID', who, `use[${i}]`, m, 'a middleware function (ctx, next)');
  });
  return Object.freeze(list);
}

const SHARED_NAMES: ReadonlySet<string> = new Set(SHARED_OPTION_NAMES);

function parseBatch(raw: unknown, who: string): { max: number } {
  fields(who, 'batch', raw, '{ max }');
  const { max } = raw as { max?: unknown };
  positiveInt('CONFIG_INVALID', who, 'batch.max', max);
  return Object.freeze({ max: max as number });
}

function parseRetry(raw: unknown, who: string): RetryOptions {
  fields(who, 'retry', raw, '{ attempts?, backoff? }');
  const retry = { ...(raw as RetryOptions) };
  if (retry.attempts !== undefined) positiveInt('CONFIG_INVALID', who, 'retry.attempts', retry.attempts);
  const b = retry.backoff;
  if (b !== undefined) {
    fields(who, 'retry.backoff', b, '{ initialMs?, maxMs? }');
    if (b.initialMs !== undefined) nonNegative(who, 'retry.backoff.initialMs', b.initialMs);
    if (b.maxMs !== undefined) nonNegative(who, 'retry.backoff.maxMs', b.maxMs);
    checkBackoff(who, b.initialMs, b.maxMs);
    retry.backoff = Object.freeze({ ...b });
  }
  return Object.freeze(retry);
}

/**
 * A backoff's `maxMs` is at least its `initialMs`, when both are given (by one layer or by two): an end left
 * out bounds nothing (no `maxMs` is below an `initialMs` left out, and a `maxMs` left out is below none).
 */
export function checkBackoff(who: string, initialMs: number | undefined, maxMs: number | undefined): void {
  if ((maxMs ?? Number.POSITIVE_INFINITY) < (initialMs ?? Number.NEGATIVE_INFINITY))
    fail('CONFIG_INVALID', who, 'retry.backoff.maxMs', maxMs, `at least initialMs (${initialMs})`);
}

/**
 * The given pace, copied and frozen at every level, as {@link SubscriberSpec.options} shows it (`parsePace`
 * has checked it: its nested parts are objects).
 */
function frozenPace(p: NonNullable<SubscriberOptions['pace']>): NonNullable<SubscriberOptions['pace']> {
  return Object.freeze({
    ...p,
    ...(typeof p.debounce === 'object' ? { debounce: Object.freeze({ ...p.debounce }) } : {}),
    ...(p.batch !== undefined ? { batch: Object.freeze({ ...p.batch }) } : {}),
    ...(p.drop !== undefined ? { drop: Object.freeze({ ...p.drop }) } : {}),
  });
}
