import type { Context } from '../core/context.js';
import type { Headers } from '../core/message.js';
import type { HandlerOutcome } from '../core/outcome.js';
import type { Duration } from './duration.js';

/** What a handler may return. */
export type HandlerResult = HandlerOutcome | void | undefined;

/** A handler: the decoded payload (an array of them for batch subscribers) and the context. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- so a handler's own payload type is taken as is
export type Handler<T = any> = (payload: T, ctx: Context) => HandlerResult | Promise<HandlerResult>;

/** An object whose `handle` is the handler. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- so a handler's own payload type is taken as is
export interface HandlerObject<T = any> {
  handle(payload: T, ctx: Context): HandlerResult | Promise<HandlerResult>;
}

/** Turns the raw message value (bytes) into the payload: a function, or an object with `parse` (a zod schema fits). */
export type Decoder<T = unknown> = ((raw: Uint8Array) => T) | { parse(raw: unknown): T };

/** What a key function sees: the decoded value and the message's own key and headers. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- so a handler's own payload type is taken as is
export interface KeySource<T = any> {
  readonly value: T;
  readonly key: string | undefined;
  readonly headers: Headers;
  readonly topic: string;
}

/** Picks the partition key of a delivery, for lanes and pace. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- so a handler's own payload type is taken as is
export type KeyFn<T = any> = (message: KeySource<T>) => string | undefined;

/** Retry policy. */
export interface RetryOptions {
  /** Attempts in all, the first included. @default 5 */
  attempts?: number;
  /** Exponential backoff between attempts: initialMs, doubling, capped at maxMs. @default { initialMs: 100, maxMs: 30_000 } */
  backoff?: { initialMs?: number; maxMs?: number };
}

/** Pace: durable flow control per key (see docs/pace.md). */
export interface PaceOptions {
  debounce?: Duration | { window: Duration; maxWait?: Duration };
  batch?: { max?: number; wait?: Duration };
  perMinute?: number;
  drop?: { max: number; per: Duration };
  order?: (start: { event: unknown; key: string }) => number;
  turns?: 'key';
  dedup?: Duration;
}

/** The settings of a subscriber (decorator options; each has a builder method of the same name). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- so a handler's own payload type is taken as is
export interface SubscriberOptions<T = any> {
  /** Unique name in the app. @default `Class.method` or the function's name */
  name?: string;
  /** Long-lived workers; at most this many deliveries in flight. @default 1 */
  workers?: number;
  /** Make the workers sequential lanes by partition key. @default false */
  byKey?: boolean;
  /** The partition key. @default the broker's key */
  key?: KeyFn<T>;
  /** Consumer group. @default the app's name */
  group?: string;
  /** @default JSON */
  decode?: Decoder<T>;
  /** Hand the handler arrays of up to `max` messages. */
  batch?: { max: number };
  retry?: RetryOptions;
  /** Dead-letter topic, or `false` to drop. @default `<topic>.dlq` */
  deadLetter?: string | false;
  pace?: PaceOptions;
  /**
   * How long one attempt may take: then `ctx.signal` aborts and the attempt counts as failed.
   * @default 60_000
   */
  timeoutMs?: number;
}

/** The settings a router (or the app) may give as defaults to what it includes. */
export const SHARED_OPTION_NAMES = ['workers', 'byKey', 'group', 'retry', 'deadLetter', 'timeoutMs', 'decode'] as const;

/** The subset of settings a router (or the app) may give as defaults to what it includes. */
export type SharedOptions = Pick<SubscriberOptions, (typeof SHARED_OPTION_NAMES)[number]>;

/** Every option name, for rejecting misspelled ones. */
export const OPTION_NAMES: ReadonlySet<string> = new Set([
  'name', 'workers', 'byKey', 'key', 'group', 'decode', 'batch', 'retry', 'deadLetter', 'pace', 'timeoutMs',
]);
