/** Header values are strings; binary headers are the adapter's business. */
export type Headers = Readonly<Record<string, string>>;

/** The header the memory broker reads the partition key from (publish's `key` option sets it). */
export const PARTITION_KEY_HEADER = 'partition-key';
/** The header a dead-lettered message carries its reason in. */
export const ERROR_HEADER = 'x-sluice-error';

/**
 * A message as a broker hands it to Sluice: raw bytes plus where it came from. Offsets are numbers
 * (exact up to 2^53); adapters convert their own representation.
 */
export interface InboundMessage {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly key: string | undefined;
  readonly headers: Headers;
  readonly value: Uint8Array;
  /** Milliseconds since the epoch, as the broker recorded it. */
  readonly timestamp: number;
}

/** What a handler sees of the message it handles: `ctx.message`. */
export interface MessageInfo {
  readonly topic: string;
  readonly key: string | undefined;
  readonly headers: Headers;
  readonly partition: number;
  readonly offset: number;
  /** `topic/partition/offset`: the broker identity of the message. */
  readonly id: string;
  readonly timestamp: number;
  /** 1 on the first delivery, 2 on the first retry, and so on. */
  readonly attempt: number;
}

/** Options of a publish. */
export interface PublishOptions {
  readonly key?: string;
  readonly headers?: Headers;
  /** Pin the partition; otherwise the key's hash picks it, or keyless messages rotate. */
  readonly partition?: number;
}

/** A value to publish: bytes (copied) and strings go as they are, anything else as JSON. Always a Buffer. */
export function encodeValue(value: unknown): Buffer {
  if (value instanceof Uint8Array) return Buffer.from(value);
  if (typeof value === 'string') return Buffer.from(value, 'utf8');
  const json = JSON.stringify(value);
  return Buffer.from(json === undefined ? 'null' : json, 'utf8');
}

/** Bytes read as UTF-8 text, without copying them. */
export function utf8(bytes: Uint8Array): string {
  return (bytes instanceof Buffer ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)).toString('utf8');
}

/** The broker identity of a message: `topic/partition/offset`. */
export function messageId(m: Pick<InboundMessage, 'topic' | 'partition' | 'offset'>): string {
  return `${m.topic}/${m.partition}/${m.offset}`;
}
