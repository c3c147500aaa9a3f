import { SluiceError } from '../../core/errors.js';
import {
  PARTITION_KEY_HEADER,
  encodeValue,
  textHeaders,
  utf8,
  type HeaderValue,
  type InboundMessage,
  type PublishOptions,
  type RawHeaders,
} from '../../core/message.js';

const EMPTY = Buffer.alloc(0);
const NO_HEADERS: RawHeaders = Object.freeze({});

/** A topic in memory: a fixed number of append-only partitions, offsets from 0 without gaps. */
export class TopicLog {
  readonly partitions: InboundMessage[][];
  private nextKeyless = 0;

  constructor(
    readonly name: string,
    partitionCount: number,
    /** The largest message (value, key and headers, in bytes) the topic takes; undefined: no limit. */
    private readonly maxMessageBytes?: number,
  ) {
    this.partitions = Array.from({ length: partitionCount }, () => []);
  }

  /**
   * Appends a message; the key picks the partition (so one key keeps its order), keyless ones rotate. The
   * message is kept as it was sent: where its key or headers are bytes, a header repeats, or it is a
   * tombstone, its `raw` has them exactly (bytes copied).
   */
  append(value: unknown, options: PublishOptions | undefined, timestamp: number): InboundMessage {
    let sent: RawHeaders = options?.headers ?? NO_HEADERS;
    if (options?.key !== undefined) sent = { ...sent, [PARTITION_KEY_HEADER]: options.key };
    const headers = textHeaders(sent);
    const key = lastOf(sent[PARTITION_KEY_HEADER]);
    const partition = options?.partition ?? this.partitionFor(key);
    const log = this.partitions[partition];
    if (log === undefined)
      throw new SluiceError(
        'CONFIG_INVALID',
        `publish to "${this.name}": partition must be an integer from 0 to ${this.partitions.length - 1}, got ${String(partition)}`,
      );
    const tombstone = options?.tombstone === true;
    const bytes = tombstone ? EMPTY : encodeValue(value);
    if (this.maxMessageBytes !== undefined) {
      const size = bytes.byteLength + sizeOf(sent);
      if (size > this.maxMessageBytes) {
        throw new SluiceError(
          'PUBLISH_REFUSED',
          `MemoryBroker: publish to "${this.name}": the message must be at most maxMessageBytes (${this.maxMessageBytes}) bytes, got ${size}`,
        );
      }
    }
    const message: InboundMessage = {
      topic: this.name,
      partition,
      offset: log.length,
      key: headers[PARTITION_KEY_HEADER],
      headers,
      value: bytes,
      timestamp,
      // Text headers (and key) are their own raw form: only bytes, repeats and tombstones need one.
      raw:
        headers === sent && !tombstone
          ? undefined
          : {
              key: key === undefined || key === null ? null : copy(key),
              value: tombstone ? null : bytes,
              headers: copyHeaders(sent),
            },
    };
    log.push(message);
    return message;
  }

  endOffset(partition: number): number {
    return this.partitions[partition]?.length ?? 0;
  }

  private partitionFor(key: HeaderValue | undefined): number {
    const n = this.partitions.length;
    if (key === undefined || key === null) return this.nextKeyless++ % n;
    return keyPartition(key, n);
  }
}

/**
 * The partition of `n` that a message with `key` lands in: a Java-style string hash (Kafka uses murmur2;
 * what matters is that one key keeps one partition). Bytes that are UTF-8 text hash as that text, so a key
 * sent as text or as its bytes lands in one partition.
 */
export function keyPartition(key: string | Uint8Array, n: number): number {
  let h = 0;
  const text = typeof key === 'string' ? key : utf8(key);
  if (typeof key === 'string' || Buffer.from(text, 'utf8').equals(key)) {
    for (let i = 0; i < text.length; i++) h = (Math.imul(h, 31) + text.charCodeAt(i)) | 0;
  } else {
    for (const byte of key) h = (Math.imul(h, 31) + byte) | 0;
  }
  return (h >>> 0) % n;
}

/** The bytes of headers' names and values (the key is header `partition-key`). */
function sizeOf(headers: RawHeaders): number {
  let size = 0;
  for (const name in headers) {
    const value = headers[name]!;
    for (const v of Array.isArray(value) ? (value as readonly HeaderValue[]) : [value as HeaderValue]) {
      size += Buffer.byteLength(name) + (v === null ? 0 : typeof v === 'string' ? Buffer.byteLength(v) : v.byteLength);
    }
  }
  return size;
}

function lastOf(value: HeaderValue | readonly HeaderValue[] | undefined): HeaderValue | undefined {
  return Array.isArray(value)
    ? (value as readonly HeaderValue[])[value.length - 1]
    : (value as HeaderValue | undefined);
}

/** A header value's bytes: a copy, so that the sender's array can change without changing the log. */
function copy(value: string | Uint8Array): Buffer {
  return typeof value === 'string' ? Buffer.from(value, 'utf8') : Buffer.from(value);
}

function copyHeaders(headers: RawHeaders): RawHeaders {
  const out: Record<string, HeaderValue | readonly HeaderValue[]> = {};
  for (const name in headers) {
    const value = headers[name]!;
    out[name] = Array.isArray(value)
      ? (value as readonly HeaderValue[]).map(copyValue)
      : copyValue(value as HeaderValue);
  }
  return out;
}

function copyValue(value: HeaderValue): HeaderValue {
  return value instanceof Uint8Array ? Buffer.from(value) : value;
}
