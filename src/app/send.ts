import { SluiceError, show } from '../core/errors.js';
import { SubscriberSpec } from '../declare/spec.js';
import { NonFiniteNumber, jsonValue } from '../pace/json-value.js';

/**
 * `T` where JSON keeps it, and `never` (so that the call does not compile) where TypeScript can tell it
 * would not: a function, a `bigint`, a `symbol`, `undefined`, or an object holding one (a `Map`'s
 * methods too). A value with `toJSON` (a `Date`) is taken as it is: JSON keeps what `toJSON` gives. `any`
 * and `unknown` are taken as they are; `send` checks them when it is called (`SEND_INVALID`).
 *
 * @category Pace
 */
export type AsJson<T> = unknown extends T
  ? T
  : T extends string | number | boolean | null
    ? T
    : T extends {
          /** What JSON takes in the value's place. */
          toJSON(): unknown;
        }
      ? T
      : T extends (...args: never[]) => unknown
        ? never
        : T extends bigint | symbol | undefined
          ? never
          : T extends object
            ? { [K in keyof T]: AsJson<T[K]> }
            : never;

/**
 * The event a paced subscriber whose handler takes `T` is sent: a `T` (a debounced run gets its latest
 * event), or one element of it when `T` is an array (a `batch` run gets every event). Anything when `T` is
 * `any` (an untyped handler) or `unknown` (a subscriber given by name).
 *
 * @category Pace
 */
export type PacedEventOf<T> = 0 extends 1 & T ? unknown : T | (T extends readonly (infer E)[] ? E : never);

/**
 * One start for {@link App.send}: the key whose coordinator takes it, its event and, optionally, an ID
 * that makes a retried send join once.
 *
 * @typeParam E - the event's type.
 * @category Pace
 */
export interface PacedStart<E = unknown> {
  /** The key whose coordinator takes the start: a string of at most {@link MAX_KEY_BYTES} bytes as UTF-8. */
  readonly key: string;
  /** The payload, a JSON value: the handler gets it as JSON gives it back. */
  readonly event: E;
  /** A non-empty string: a start whose ID the key has seen within `dedup` gets the first receipt again. */
  readonly eventId?: string;
}

/** What `send` checks against the app. */
export interface SendTarget {
  readonly name: string;
  readonly state: string;
  has(name: string): boolean;
  paced(name: string): boolean;
}

/** The subscriber's name that `send` was given (a spec's name), or undefined for anything else. */
export function nameOf(subscriber: unknown): string | undefined {
  if (typeof subscriber === 'string') return subscriber;
  return subscriber instanceof SubscriberSpec ? subscriber.name : undefined;
}

/** Why `send` cannot take a start, or undefined when it can. */
export function sendRefusal(app: SendTarget, subscriber: unknown, start: unknown): SluiceError | undefined {
  const name = nameOf(subscriber);
  if (name === undefined || !app.has(name))
    return new SluiceError(
      'UNKNOWN_SUBSCRIBER',
      `App "${app.name}": no subscriber is named ${show(name ?? subscriber)}`,
    );
  if (!app.paced(name))
    return new SluiceError(
      'CONFIG_INVALID',
      `App "${app.name}": subscriber ${show(name)} is not paced; send() starts paced subscribers only`,
    );
  if (app.state !== 'running')
    return new SluiceError('APP_STATE', `App "${app.name}": send() needs a running app, it is ${app.state}`);
  const bad = (what: string, value: unknown): SluiceError =>
    new SluiceError('SEND_INVALID', `App "${app.name}": send(${show(name)}): ${what}, got ${show(value)}`);
  if (start === null || typeof start !== 'object') return bad('the start must be { key, event, eventId? }', start);
  // A misspelt field (`evntId`) would silently turn dedup off.
  const unknown = Object.keys(start).filter((field) => !START_FIELDS.has(field));
  if (unknown.length > 0)
    return bad(
      `a start has the fields key, event and eventId only (${unknown.map((f) => show(f)).join(', ')} is not one)`,
      start,
    );
  const { key, event, eventId } = start as { key?: unknown; event?: unknown; eventId?: unknown };
  if (typeof key !== 'string') return bad('key must be a string', key);
  if (eventId !== undefined && (typeof eventId !== 'string' || eventId === ''))
    return bad('eventId must be a non-empty string', eventId);
  const notFinite = nonFinite(event);
  if (notFinite !== undefined) return bad(`event holds ${notFinite}, which JSON cannot carry`, event);
  return undefined;
}

/** The fields of a {@link PacedStart}. */
const START_FIELDS: ReadonlySet<string> = new Set(['key', 'event', 'eventId']);

/** `NaN` or `Infinity` where `event` holds one (JSON would deliver `null`), else undefined. */
function nonFinite(event: unknown): string | undefined {
  try {
    jsonValue(event, { finite: true });
    return undefined;
  } catch (error) {
    // Anything else JSON refuses is told where the event is journaled.
    return error instanceof NonFiniteNumber ? String(error.value) : undefined;
  }
}
