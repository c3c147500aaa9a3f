/**
 * Headers as text: each header's value read as UTF-8 (bytes that are not UTF-8 become U+FFFD), and a header
 * sent more than once with its last value. `RawMessage.headers` has them exactly.
 *
 * @category Messages
 */
export type Headers = Readonly<Record<string, string>>;

/**
 * One header value as a broker carries it: bytes, text (its UTF-8 bytes), or null (Kafka allows a null value).
 *
 * @category Messages
 */
export type HeaderValue = string | Uint8Array | null;

/**
 * Headers exactly as a broker carries them: a header sent more than once has every value, in order.
 *
 * @category Messages
 */
export type RawHeaders = Readonly<Record<string, HeaderValue | readonly HeaderValue[]>>;

/**
 * A message exactly as the broker holds it: the bytes of its key, value and headers, a header's repeated
 * values, a null value. What a dead letter forwards, so that it is the original message.
 *
 * @category Messages
 */
export interface RawMessage {
  /** The key's bytes; null when there is none. */
  readonly key: Uint8Array | null;
  /** The value's bytes; null for a tombstone (a Kafka message whose value is null). */
  readonly value: Uint8Array | null;
  /** The headers as the broker holds them: bytes or text, every value of a repeated header. */
  readonly headers: RawHeaders;
}

/**
 * The header the memory broker keeps a message's key in, `partition-key` (publish's `key` option sets it).
 *
 * @category Messages
 */
export const PARTITION_KEY_HEADER = 'partition-key';
/**
 * The header a dead letter carries its reason in, `x-sluice-error`: the handler's `reject` reason,
 * `exhausted <n> attempts: <last reason>`, or `DECODE_FAILED: <the decoder's message>`.
 *
 * @category Messages
 */
export const ERROR_HEADER = 'x-sluice-error';

/**
 * A message as a broker hands it to Sluice: raw bytes plus where it came from. Offsets are numbers
 * (exact up to 2^53); adapters convert their own representation.
 *
 * @category Messages
 */
export interface InboundMessage {
  /** The topic it was read from. */
  readonly topic: string;
  /** Its partition, from 0. */
  readonly partition: number;
  /** Its offset in the partition. */
  readonly offset: number;
  /** The key as UTF-8 text; `undefined` when it has none. */
  readonly key: string | undefined;
  /** The headers as text (see {@link Headers}). */
  readonly headers: Headers;
  /** The value's bytes (empty for a tombstone: see `raw`). */
  readonly value: Uint8Array;
  /** Milliseconds since the epoch, as the broker recorded it. */
  readonly timestamp: number;
  /**
   * The message exactly as the broker holds it, where `key`, `headers` and `value` are not: a key or header
   * that is not UTF-8 text, a repeated header, a tombstone. Absent when they are.
   */
  readonly raw?: RawMessage;
}

/** The message exactly as the broker holds it: its `raw`, or what its key, headers and value are. */
export function rawOf(m: InboundMessage): RawMessage {
  return m.raw ?? { key: m.key === undefined ? null : Buffer.from(m.key, 'utf8'), value: m.value, headers: m.headers };
}

/**
 * What a handler sees of the message it handles: `ctx.message`.
 *
 * @category Messages
 */
export interface MessageInfo {
  /** The topic it was read from (the full topic, router prefix included). */
  readonly topic: string;
  /** The key as UTF-8 text; `undefined` when it has none. */
  readonly key: string | undefined;
  /** The headers as text: UTF-8, a header sent several times with its last value (see {@link Headers}). */
  readonly headers: Headers;
  /** Its partition, from 0. */
  readonly partition: number;
  /** Its offset in the partition. */
  readonly offset: number;
  /** `topic/partition/offset`: the broker identity of the message. */
  readonly id: string;
  /** Milliseconds since the epoch, as the broker recorded it. */
  readonly timestamp: number;
  /** 1 on the first delivery, 2 on the first retry, and so on. */
  readonly attempt: number;
  /**
   * The message exactly as the broker holds it: key, value and header bytes, repeated headers, a tombstone's null
   * value.
   */
  readonly raw: RawMessage;
}

/**
 * Options of a publish: {@link Context.publish}, {@link Broker.publish}.
 *
 * @example
 * ```ts
 * await ctx.publish('receipts', { orderId: 'o1' }, { key: 'cust-1', headers: { 'trace-id': traceId } });
 * await broker.publish('customers', undefined, { key: 'cust-1', tombstone: true });
 * ```
 *
 * @category Messages
 */
export interface PublishOptions {
  /** Text (sent as UTF-8) or bytes (sent as they are). */
  readonly key?: string | Uint8Array;
  /** Text or bytes; an array sends the header once per value, in order. */
  readonly headers?: RawHeaders;
  /** Pin the partition; otherwise the key's hash picks it, or keyless messages rotate. */
  readonly partition?: number;
  /** Send no value at all (a Kafka tombstone, value null): the `value` argument is ignored. */
  readonly tombstone?: boolean;
}

/** A value to publish: bytes (copied) and strings go as they are, anything else as JSON. Always a Buffer. */
export function encodeValue(value: unknown): Buffer {
  if (value instanceof Uint8Array) return Buffer.from(value);
  if (typeof value === 'string') return Buffer.from(value, 'utf8');
  const json = JSON.stringify(value);
  return Buffer.from(json === undefined ? 'null' : json, 'utf8');
}

/**
 * Raw headers as text headers: each value read as UTF-8, a repeated header's last value, a null value
 * left out. Returns `raw` itself when it is text already.
 */
export function textHeaders(raw: RawHeaders | undefined): Headers {
  if (raw === undefined) return NO_HEADERS;
  if (isText(raw)) return raw;
  const out: Record<string, string> = {};
  for (const name of Object.keys(raw)) {
    const value = raw[name];
    const last = isList(value) ? value[value.length - 1] : value;
    if (last === undefined || last === null) continue;
    const text = typeof last === 'string' ? last : utf8(last);
    // A header named `__proto__` is a header like any other: an own property, as JSON.parse makes it.
    if (name === '__proto__')
      Object.defineProperty(out, name, { value: text, enumerable: true, writable: true, configurable: true });
    else out[name] = text;
  }
  return out;
}

function isText(raw: RawHeaders): raw is Headers {
  for (const name in raw) if (typeof raw[name] !== 'string') return false;
  return true;
}

function isList(value: HeaderValue | readonly HeaderValue[] | undefined): value is readonly HeaderValue[] {
  return Array.isArray(value);
}

const NO_HEADERS: Headers = Object.freeze({});

/** Bytes read as UTF-8 text, without copying them. */
export function utf8(bytes: Uint8Array): string {
  return (bytes instanceof Buffer ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)).toString(
    'utf8',
  );
}

/** The broker identity of a message: `topic/partition/offset`. */
export function messageId(m: Pick<InboundMessage, 'topic' | 'partition' | 'offset'>): string {
  return `${m.topic}/${m.partition}/${m.offset}`;
}
