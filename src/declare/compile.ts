import { SluiceError, show } from '../core/errors.js';
import { utf8 } from '../core/message.js';
import type { Handler, KeyFn, PaceOptions, SharedOptions, SubscriberOptions } from './options.js';
import type { Mounted } from './router.js';
import { checkName, validateOptions } from './validate.js';

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
  /** The pace settings as given (checked), or `undefined` for an unpaced subscriber. */
  readonly pace: PaceOptions | undefined;
  /** The handler (a decorated method bound to its instance, a handler object's `handle` bound to it). */
  readonly handler: Handler;
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
 * Merges a subscriber's settings over its routers' and the app's, checks the merged result as one
 * subscriber's settings (so no combination of layers escapes validation), applies defaults, freezes it.
 * Nested settings come out as frozen copies; functions are kept by reference.
 */
export function compile(mounted: Mounted, app: { name: string; defaults?: SharedOptions }): CompiledSubscriber {
  const { spec, prefix, layers } = mounted;
  const own: SubscriberOptions = spec.options;
  // Own settings first, then the innermost router, outwards, then the app.
  const chain: SharedOptions[] = [own, ...layers, app.defaults ?? {}];
  const pick = <K extends keyof SharedOptions>(k: K): SharedOptions[K] => chain.find((o) => o[k] !== undefined)?.[k];
  const topic = prefix + spec.topic;
  const name = spec.name;
  checkName(`subscriber ${show(name)}`, name); // a default name (a method's or function's) too
  if (!(typeof topic === 'string' && topic !== '' && !topic.includes('\u0000'))) {
    throw new SluiceError(
      'CONFIG_INVALID',
      `subscriber ${show(name)}: topic must be a non-empty string without NUL, got ${show(topic)}`,
    );
  }
  // retry merges field by field: a subscriber's attempts keep its router's backoff.
  const retries = chain.map((o) => o.retry).filter((r) => r !== undefined);
  const retryField = <T>(get: (r: NonNullable<SharedOptions['retry']>) => T | undefined): T | undefined =>
    retries.map(get).find((v) => v !== undefined);
  const merged = validateOptions<SubscriberOptions>(
    {
      ...own,
      workers: pick('workers'),
      byKey: (own.workers !== undefined ? own.byKey : pick('byKey')) ?? false,
      group: pick('group'),
      decode: pick('decode'),
      retry: {
        attempts: retryField((r) => r.attempts),
        backoff: { initialMs: retryField((r) => r.backoff?.initialMs), maxMs: retryField((r) => r.backoff?.maxMs) },
      },
      deadLetter: pick('deadLetter'),
      timeoutMs: pick('timeoutMs'),
    },
    `subscriber "${name}"`,
  );
  const backoff = merged.retry!.backoff!;
  const initialMs = backoff.initialMs ?? DEFAULTS.initialMs;
  const compiled: CompiledSubscriber = {
    name,
    topic,
    group: merged.group ?? app.name,
    workers: merged.workers ?? DEFAULTS.workers,
    byKey: merged.byKey!,
    key: merged.key,
    decode: decoderOf(merged.decode),
    batchMax: merged.batch?.max,
    retry: Object.freeze({
      attempts: merged.retry!.attempts ?? DEFAULTS.attempts,
      initialMs,
      maxMs: backoff.maxMs ?? Math.max(initialMs, DEFAULTS.maxMs),
    }),
    deadLetter: merged.deadLetter ?? `${topic}.dlq`,
    timeoutMs: merged.timeoutMs ?? DEFAULTS.timeoutMs,
    pace: merged.pace,
    handler: spec.handler,
  };
  if (compiled.pace !== undefined && compiled.batchMax !== undefined) {
    throw new SluiceError(
      'CONFIG_INVALID',
      `subscriber "${name}": batch must not be combined with pace (a paced run is one key's; use pace.batch), got batch ${show(merged.batch)}`,
    );
  }
  return Object.freeze(compiled);
}

/** The default decoder: UTF-8 JSON. */
export function decodeJson(raw: Uint8Array): unknown {
  return JSON.parse(utf8(raw));
}

function decoderOf(decode: SubscriberOptions['decode']): (raw: Uint8Array) => unknown {
  if (decode === undefined) return decodeJson;
  if (typeof decode === 'function') return decode as (raw: Uint8Array) => unknown;
  const schema: { parse(raw: unknown): unknown } = decode;
  // A schema validates a JSON value: decode JSON first.
  return (raw) => schema.parse(decodeJson(raw));
}
