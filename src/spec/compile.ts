import { SluiceError, show } from '../core/errors.js';
import { utf8 } from '../core/message.js';
import type { Handler, KeyFn, PaceOptions, SharedOptions, SubscriberOptions } from './options.js';
import type { Mounted } from './router.js';
import { checkName, validateOptions } from './validate.js';

/** A subscriber with every setting resolved: what the app runs. Frozen. */
export interface CompiledSubscriber {
  readonly name: string;
  readonly topic: string;
  readonly group: string;
  readonly workers: number;
  readonly byKey: boolean;
  readonly key: KeyFn | undefined;
  readonly decode: (raw: Uint8Array) => unknown;
  /** Messages per batch for batch handlers; undefined for one-at-a-time handlers. */
  readonly batchMax: number | undefined;
  readonly retry: { readonly attempts: number; readonly initialMs: number; readonly maxMs: number };
  readonly deadLetter: string | false;
  readonly timeoutMs: number;
  readonly pace: PaceOptions | undefined;
  readonly handler: Handler;
}

/** Defaults of every subscriber. */
export const DEFAULTS = Object.freeze({
  workers: 1,
  attempts: 5,
  initialMs: 100,
  maxMs: 30_000,
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
    throw new SluiceError('CONFIG_INVALID', `subscriber ${show(name)}: topic must be a non-empty string without NUL, got ${show(topic)}`);
  }
  // retry merges field by field: a subscriber's attempts keep its router's backoff.
  const retries = chain.map((o) => o.retry).filter((r) => r !== undefined);
  const retryField = <T>(get: (r: NonNullable<SharedOptions['retry']>) => T | undefined): T | undefined => retries.map(get).find((v) => v !== undefined);
  const merged = validateOptions<SubscriberOptions>(
    {
      ...own,
      workers: pick('workers'),
      byKey: (own.workers !== undefined ? own.byKey : pick('byKey')) ?? false,
      group: pick('group'),
      decode: pick('decode'),
      retry: { attempts: retryField((r) => r.attempts), backoff: { initialMs: retryField((r) => r.backoff?.initialMs), maxMs: retryField((r) => r.backoff?.maxMs) } },
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
    retry: Object.freeze({ attempts: merged.retry!.attempts ?? DEFAULTS.attempts, initialMs, maxMs: backoff.maxMs ?? Math.max(initialMs, DEFAULTS.maxMs) }),
    deadLetter: merged.deadLetter ?? `${topic}.dlq`,
    timeoutMs: merged.timeoutMs ?? DEFAULTS.timeoutMs,
    pace: merged.pace,
    handler: spec.handler,
  };
  if (compiled.pace !== undefined && compiled.batchMax !== undefined) {
    throw new SluiceError('CONFIG_INVALID', `subscriber "${name}": batch must not be combined with pace (a paced run is one key's; use pace.batch), got batch ${show(merged.batch)}`);
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
