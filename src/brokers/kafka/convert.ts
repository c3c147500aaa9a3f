import type { IHeaders, KafkaMessage } from 'kafkajs';
import {
  textHeaders,
  type HeaderValue,
  type Headers,
  type InboundMessage,
  type RawHeaders,
  type RawMessage,
} from '../../core/message.js';

const EMPTY = Buffer.alloc(0);
const NO_HEADERS: RawHeaders = Object.freeze({});

/**
 * kafkajs headers (Buffers, strings or arrays of them) as Sluice's text headers; a repeated header keeps its last
 * value.
 */
export function headersFrom(raw: IHeaders | undefined): Headers {
  return textHeaders(raw as RawHeaders | undefined);
}

/**
 * Sluice's raw headers as kafkajs sends them: bytes as Buffers, a repeated header as an array. kafkajs
 * cannot send a null header value (it reads them), so a null value goes as an empty one.
 */
export function headersTo(headers: RawHeaders): IHeaders {
  const out: IHeaders = {};
  for (const name in headers) {
    const value = headers[name]!;
    out[name] = Array.isArray(value) ? (value as readonly HeaderValue[]).map(toKafka) : toKafka(value as HeaderValue);
  }
  return out;
}

function toKafka(value: HeaderValue): Buffer | string {
  if (value === null) return EMPTY;
  return typeof value === 'string' || Buffer.isBuffer(value)
    ? value
    : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}

/**
 * A kafkajs message as the app's InboundMessage. Key, headers and timestamp are converted on first read:
 * a pool whose handler reads only the value never pays for them.
 */
export class KafkaInbound implements InboundMessage {
  readonly offset: number;
  readonly value: Uint8Array;
  private convertedKey: string | undefined | null = null;
  private convertedHeaders: Headers | undefined;

  constructor(
    readonly topic: string,
    readonly partition: number,
    private readonly record: KafkaMessage,
  ) {
    this.offset = Number(record.offset);
    this.value = record.value ?? EMPTY;
  }

  get key(): string | undefined {
    if (this.convertedKey === null)
      this.convertedKey =
        this.record.key === null || this.record.key === undefined ? undefined : this.record.key.toString('utf8');
    return this.convertedKey;
  }

  get headers(): Headers {
    return (this.convertedHeaders ??= headersFrom(this.record.headers));
  }

  get timestamp(): number {
    return Number(this.record.timestamp);
  }

  /** The record as kafkajs read it: key and header bytes, repeated headers, a null value. */
  get raw(): RawMessage {
    return {
      key: this.record.key ?? null,
      value: this.record.value ?? null,
      headers: (this.record.headers as RawHeaders | undefined) ?? NO_HEADERS,
    };
  }
}
