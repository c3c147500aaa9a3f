import type { IHeaders, KafkaMessage } from 'kafkajs';
import type { Headers, InboundMessage } from '../../core/message.js';

const EMPTY = Buffer.alloc(0);

/** kafkajs headers (Buffers, strings or arrays of them) as Sluice's string headers; a repeated header keeps its last value. */
export function headersFrom(raw: IHeaders | undefined): Headers {
  if (raw === undefined) return NO_HEADERS;
  let out: Record<string, string> | undefined;
  for (const name of Object.keys(raw)) {
    const value = raw[name];
    const last = Array.isArray(value) ? value[value.length - 1] : value;
    if (last === undefined) continue;
    const text = typeof last === 'string' ? last : last.toString('utf8');
    out ??= {};
    // A header named `__proto__` is a header like any other: an own property, as JSON.parse makes it.
    if (name === '__proto__') Object.defineProperty(out, name, { value: text, enumerable: true, writable: true, configurable: true });
    else out[name] = text;
  }
  return out ?? NO_HEADERS;
}

const NO_HEADERS: Headers = Object.freeze({});

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
    private readonly raw: KafkaMessage,
  ) {
    this.offset = Number(raw.offset);
    this.value = raw.value ?? EMPTY;
  }

  get key(): string | undefined {
    if (this.convertedKey === null) this.convertedKey = this.raw.key === null || this.raw.key === undefined ? undefined : this.raw.key.toString('utf8');
    return this.convertedKey;
  }

  get headers(): Headers {
    return (this.convertedHeaders ??= headersFrom(this.raw.headers));
  }

  get timestamp(): number {
    return Number(this.raw.timestamp);
  }
}
