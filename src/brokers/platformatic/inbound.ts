import type { Message } from '@platformatic/kafka';
import type { StoredMessage } from '../kafka/store/store-client.js';
import {
  textHeaders,
  type Headers,
  type InboundMessage,
  type RawHeaders,
  type RawMessage,
} from '../../core/message.js';

const EMPTY = Buffer.alloc(0);

/** A message as @platformatic/kafka read it (Buffers throughout), for the app. Converted on first read. */
export class PlatformaticInbound implements InboundMessage {
  readonly offset: number;
  readonly value: Uint8Array;
  private text: Headers | undefined;
  private rawHeaders: RawHeaders | undefined;

  constructor(private readonly record: Message<Buffer, Buffer, Buffer, Buffer>) {
    this.offset = Number(record.offset);
    this.value = record.value ?? EMPTY;
  }

  get topic(): string {
    return this.record.topic;
  }

  get partition(): number {
    return this.record.partition;
  }

  get key(): string | undefined {
    const key = this.record.key;
    return key === undefined || key === null ? undefined : key.toString('utf8');
  }

  get headers(): Headers {
    return (this.text ??= textHeaders(this.headersRaw()));
  }

  get timestamp(): number {
    return Number(this.record.timestamp);
  }

  /** The record as the broker holds it: key and header bytes, repeated headers, a null value. */
  get raw(): RawMessage {
    return { key: this.record.key ?? null, value: this.record.value ?? null, headers: this.headersRaw() };
  }

  /** The headers in the order written; a repeated header as an array of its values. */
  private headersRaw(): RawHeaders {
    if (this.rawHeaders !== undefined) return this.rawHeaders;
    // No prototype: a header named `__proto__` is a header like any other.
    const out = Object.create(null) as Record<string, Buffer | Buffer[]>;
    for (const [k, v] of this.record.headerEntries ?? this.record.headers) {
      const name = k.toString('utf8');
      const seen = out[name];
      if (seen === undefined) out[name] = v;
      else if (Array.isArray(seen)) seen.push(v);
      else out[name] = [seen, v];
    }
    return (this.rawHeaders = out);
  }
}

/** A message of `partition` of `topic` as a read without a group gave it (see `readOnce`), for the app. */
export function inboundOf(topic: string, partition: number, m: StoredMessage): PlatformaticInbound {
  const record = {
    topic,
    partition,
    offset: BigInt(m.offset),
    key: m.key,
    value: m.value,
    headers: new Map(),
    headerEntries: m.recordHeaders ?? [],
    timestamp: m.appendedAt ?? 0n,
  };
  return new PlatformaticInbound(record as unknown as Message<Buffer, Buffer, Buffer, Buffer>);
}
