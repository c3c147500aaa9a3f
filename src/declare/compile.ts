import { show } from '../core/errors.js';
import { utf8 } from '../core/message.js';
import type { Middleware } from '../core/middleware.js';
import { fail } from './checks.js';
import type {
  Handler,
  KeyFn,
  RetryOptions,
  SharedOptions,
  StandardResult,
  StandardSchema,
  SubscriberOptions,
} from './options.js';
import type { CompiledPace } from './pace.js';
import { checkBackoff } from './parse.js';
import type { Mounted } from './router.js';
import type { Topic } from './topic.js';

/**
 * A subscriber with every setting resolved (its own over its routers' over the app's `defaults` over
 * {@link DEFAULTS}): what the app runs, and what {@link App.subscribers} lists. Frozen.
 *
 * @category Subscribers
 */
export interface CompiledSubscriber {
  /** Its name, unique in the app. */
  readonly name: string;
  /** The full topic, router prefixes included. */
  readonly topic: string;
  /** The consumer group: its own, a router's, the app's `defaults`', or the app's name. */
  readonly group: string;
  /** Workers (or lanes): the most deliveries in flight. */
  readonly workers: number;
  /** True for lanes by key, false for a pool. */
  readonly byKey: boolean;
  /** The `key` function; `undefined` for the broker's key. */
  readonly key: KeyFn | undefined;
  /** The decoder as a function of the raw bytes (a `parse` object is wrapped: JSON first, then `parse`). */
  readonly decode: (raw: Uint8Array) => unknown;
  /** The decoder as given (a Standard Schema, a `parse` object, a function), or `undefined` for plain JSON. */
  readonly schema: SubscriberOptions['decode'];
  /** Messages per batch for batch handlers; undefined for one-at-a-time handlers. */
  readonly batchMax: number | undefined;
  /** The retry policy. */
  readonly retry: {
    /** Attempts in all, the first included. */
    readonly attempts: number;
    /** The delay before the second attempt, in milliseconds; it doubles for each attempt after. */
    readonly initialMs: number;
    /** The longest delay between attempts, in milliseconds. */
    readonly maxMs: number;
  };
  /** The dead-letter topic (by default `<topic>.dlq`), or `false`: rejected and exhausted deliveries are dropped. */
  readonly deadLetter: string | false;
  /** How long one attempt may take, in milliseconds. */
  readonly timeoutMs: number;
  /** The pace settings, parsed (durations in milliseconds), or `undefined` for an unpaced subscriber. */
  readonly pace: CompiledPace | undefined;
  /** The handler (a decorated method bound to its instance, a handler object's `handle` bound to it). */
  readonly handler: Handler;
  /**
   * Its routers' middlewares (the outermost router's first) then its own: everything around its handler but the
   * app's (`app.use`), which go outside these.
   */
  readonly middlewares: readonly Middleware[];
  /** The topics its handler's return value is published on (`publishTo`), in the order given. */
  readonly publishTo: readonly Topic<unknown, unknown>[];
  /** Whether its handler's return value answers the requests it gets (`replies`). */
  readonly replies: boolean;
  /** Whether its publishes commit with its input offsets, in one transaction per partition (`exactlyOnce`). */
  readonly exactlyOnce: boolean;
}

/**
 * The built-in defaults of every subscriber, used where neither the subscriber, its routers nor the app's
 * `defaults` set a value. A missing `retry.backoff.maxMs` is `max(initialMs, DEFAULTS.maxMs)`.
 *
 * @category Subscribers
 */
export const DEFAULTS = Object.freeze({
  /** Workers: one delivery at a time, in order. */
  workers: 1,
  /** Attempts in all, the first included. */
  attempts: 5,
  /** The first retry's backoff, in milliseconds. */
  initialMs: 100,
  /** The longest backoff, in milliseconds. */
  maxMs: 30_000,
  /** How long one attempt may take, in milliseconds. */
  timeoutMs: 60_000,
});

/**
 * Merges a subscriber's parsed settings over its routers' and the app's, applies defaults, and freezes the
 * result. Each layer was parsed where it was given; this checks only what no single layer could: the
 * mounted topic, a backoff whose ends come from two layers, and a router's `byKey` under the subscriber's
 * own `batch`.
 */
export function compile(mounted: Mounted, app: { name: string; defaults?: SharedOptions }): CompiledSubscriber {
  const { spec, prefix, layers } = mounted;
  const own: SubscriberOptions = spec.options;
  // Own settings first, then the innermost router, outwards, then the app.
  const chain: SharedOptions[] = [own, ...layers, app.defaults ?? {}];
  const pick = <K extends keyof SharedOptions>(k: K): SharedOptions[K] => chain.find((o) => o[k] !== undefined)?.[k];
  const topic = prefix + spec.topic;
  const name = spec.name;
  const who = `subscriber "${name}"`;
  if (topic.includes('\u0000'))
    fail('CONFIG_INVALID', `subscriber ${show(name)}`, 'topic', topic, 'a non-empty string without NUL');
  // retry merges field by field: a subscriber's attempts keep its router's backoff.
  const retries = chain.map((o) => o.retry).filter((r) => r !== undefined);
  const retryField = <T>(get: (r: RetryOptions) => T | undefined): T | undefined =>
    retries.map(get).find((v) => v !== undefined);
  const givenInitialMs = retryField((r) => r.backoff?.initialMs);
  const givenMaxMs = retryField((r) => r.backoff?.maxMs);
  checkBackoff(who, givenInitialMs, givenMaxMs);
  const byKey = (own.workers !== undefined ? own.byKey : pick('byKey')) ?? false;
  if (byKey && own.batch !== undefined)
    fail(
      'CONFIG_INVALID',
      who,
      'batch',
      own.batch,
      'left out when byKey is set (a batch spans keys; use pace.batch for per-key batches)',
    );
  const initialMs = givenInitialMs ?? DEFAULTS.initialMs;
  return Object.freeze({
    name,
    topic,
    group: pick('group') ?? app.name,
    workers: pick('workers') ?? DEFAULTS.workers,
    byKey,
    key: own.key,
    decode: decoderOf(pick('decode')),
    schema: pick('decode'),
    batchMax: own.batch?.max,
    retry: Object.freeze({
      attempts: retryField((r) => r.attempts) ?? DEFAULTS.attempts,
      initialMs,
      maxMs: givenMaxMs ?? Math.max(initialMs, DEFAULTS.maxMs),
    }),
    deadLetter: pick('deadLetter') ?? `${topic}.dlq`,
    timeoutMs: pick('timeoutMs') ?? DEFAULTS.timeoutMs,
    pace: spec.pace,
    handler: spec.handler,
    middlewares: Object.freeze([...(mounted.middlewares ?? []), ...((own.use ?? []) as readonly Middleware[])]),
    publishTo: own.publishTo ?? [],
    replies: own.replies ?? false,
    exactlyOnce: own.exactlyOnce ?? false,
  });
}

/** The default decoder: UTF-8 JSON. */
export function decodeJson(raw: Uint8Array): unknown {
  return JSON.parse(utf8(raw));
}

/** A decoder as a function of the raw bytes: a schema's (`parse` or Standard) after JSON, JSON without one. */
export function decoderOf(decode: SubscriberOptions['decode']): (raw: Uint8Array) => unknown {
  if (decode === undefined) return decodeJson;
  if (typeof decode === 'function') return decode as (raw: Uint8Array) => unknown;
  // A schema validates a JSON value: decode JSON first.
  if ('parse' in decode && typeof decode.parse === 'function') {
    const schema: { parse(raw: unknown): unknown } = decode;
    return (raw) => schema.parse(decodeJson(raw));
  }
  const standard = (decode as StandardSchema)['~standard'];
  return (raw) => standardValue(standard.validate(decodeJson(raw)));
}

/** A Standard Schema's answer as the payload; throws, naming every issue, when it refuses the value. */
function standardValue(result: StandardResult<unknown> | Promise<StandardResult<unknown>>): unknown {
  if (result instanceof Promise) {
    result.catch(() => {}); // not awaited: decoding is synchronous
    throw new Error('the schema validates asynchronously; a decoder must answer at once');
  }
  if (result.issues === undefined) return result.value;
  const told = result.issues.map((i) => {
    const path = (i.path ?? []).map((p) => String(typeof p === 'object' ? p.key : p)).join('.');
    return path === '' ? i.message : `${path}: ${i.message}`;
  });
  throw new Error(`the schema refused the value: ${told.join('; ')}`);
}
