import { SluiceError, reasonOf, show } from '../core/errors.js';
import { MAX_KEY_BYTES, type CompiledPace } from '../pace/config.js';
import { jsonValue } from '../pace/json-value.js';
import type { PaceEvent } from '../pace/rules.js';

/**
 * An event to append to a coordinator: from `app.send` (an optional ID) or from a broker delivery (its
 * source and offset).
 */
export interface Appended {
  readonly key: string;
  readonly event: unknown;
  readonly eventId?: string;
  readonly source?: {
    readonly topic: string;
    readonly partition: number;
    readonly offset: number;
    /** When the broker appended it (a delivery's; a routed request's is not the event's). */
    readonly timestamp?: number;
  };
  /**
   * The UTF-8 JSON text `event` was decoded from, and nothing else (a delivery's payload, no schema): the
   * journal keeps these bytes as they are, and `event` itself is applied, not a copy of it. Whatever reads
   * `event` before it is appended (a key function, `pace.order`) must not change it.
   */
  readonly json?: Uint8Array;
}

/** Refuses a key past the limit before anything happens: it is never journaled. */
export function checkKey(subscriber: string, key: string): void {
  if (key.length <= MAX_KEY_BYTES / 3) return; // at most 3 bytes a UTF-16 unit: no need to count
  const bytes = Buffer.byteLength(key);
  if (bytes > MAX_KEY_BYTES)
    throw new SluiceError(
      'SEND_INVALID',
      `subscriber "${subscriber}": a key may take at most MAX_KEY_BYTES (${MAX_KEY_BYTES}) bytes as UTF-8, got ${bytes}`,
    );
}

/**
 * The event as JSON gives it back (as a replay will read it, and not shared with the sender); anything
 * JSON does not keep is refused with `SEND_INVALID`.
 */
export function eventJson(value: unknown): unknown {
  try {
    const event = jsonValue(value);
    // undefined, a function or a symbol has no JSON (JSON.stringify gives undefined): not an event.
    if (event === undefined) throw new TypeError(`${typeof value} is not a JSON value`);
    return event;
  } catch (error) {
    throw new SluiceError('SEND_INVALID', `pace: an event must be JSON, got ${show(value)}: ${reasonOf(error)}`);
  }
}

/** A record too long for any store (`SEND_INVALID`), told as the sender's event; any other error as it is. */
export function tooLong(error: unknown, subscriber: string, key: string): unknown {
  if (!(error instanceof SluiceError && error.code === 'SEND_INVALID')) return error;
  return new SluiceError(
    'SEND_INVALID',
    `subscriber "${subscriber}": an event, journaled as JSON with its key and ID, may take at most 64 MiB; key ${show(key.slice(0, 40))}: ${error.message}`,
    { cause: error },
  );
}

/** The event as the rules read it, with the UUID of the run it opens (`''` when it joins one). */
export function eventOf(
  subscriber: string,
  pace: CompiledPace | undefined,
  appended: Appended,
  runUuid: string,
  time?: number,
): PaceEvent {
  // A value decoded from JSON text is what JSON gives back already.
  const event = appended.json === undefined ? eventJson(appended.event) : appended.event;
  const order = pace?.order;
  const e: { -readonly [K in keyof PaceEvent]: PaceEvent[K] } = {
    event,
    runUuid,
    order: order === undefined ? 0 : orderOf(order, appended, subscriber),
  };
  const src = appended.source;
  if (src !== undefined) e.source = { partition: sourceOf(src.topic, src.partition), offset: src.offset };
  else if (appended.eventId !== undefined) e.eventId = appended.eventId;
  if (time !== undefined) e.time = time;
  return e;
}

/** `topic/partition` strings made so far, by topic then partition: a state's offsets are looked up by them. */
const sources = new Map<string, string[]>();
/** At most this many topics' strings are kept (a process reading more makes the others afresh). */
const SOURCE_TOPICS = 1_024;

/**
 * A delivery's `topic/partition`, the same string each time: a fresh string is hashed again at every lookup
 * of the offsets a state remembers by it.
 */
function sourceOf(topic: string, partition: number): string {
  let byPartition = sources.get(topic);
  if (byPartition === undefined) {
    byPartition = [];
    if (sources.size < SOURCE_TOPICS) sources.set(topic, byPartition);
  }
  return (byPartition[partition] ??= `${topic}/${partition}`);
}

/** Asks `pace.order` for an event's number: a finite number, or the event is refused with `SEND_INVALID`. */
function orderOf(
  order: (start: { event: unknown; key: string }) => number,
  start: Appended,
  subscriber: string,
): number {
  let o: unknown;
  try {
    o = order({ event: start.event, key: start.key });
  } catch (error) {
    throw new SluiceError(
      'SEND_INVALID',
      `subscriber "${subscriber}": pace.order threw for key ${show(start.key)}: ${reasonOf(error)}`,
      { cause: error },
    );
  }
  if (typeof o !== 'number' || !Number.isFinite(o))
    throw new SluiceError(
      'SEND_INVALID',
      `subscriber "${subscriber}": pace.order must return a finite number, got ${show(o)} for key ${show(start.key)}`,
    );
  return o;
}
