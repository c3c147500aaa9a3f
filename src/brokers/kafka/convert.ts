import type { IHeaders, KafkaMessage } from 'kafkajs';
import type { Headers, InboundMessage } from '../../core/message.js';

const EMPTY = Buffer.alloc(0);

/** kafkajs headers (Buffers, strings or arrays of them) as Sluice's string headers; a repeated header keeps its last value. */
export function headersFrom(raw: IHeaders | undefined): Headers {
  let out: Record<string, string> | undefined;
  for (const name in raw) {
    const value = raw[name];
    const last = Array.isArray(value) ? value[value.length - 1] : value;
    if (last !== undefined) (out ??= {})[name] = typeof last === 'string' ? last : last.toString('utf8');
  }
  return out ?? NO_HEADERS;
}

const NO_HEADERS: Headers = Object.freeze({});

/** A kafkajs message as the app's InboundMessage. */
export function inbound(topic: string, partition: number, m: KafkaMessage): InboundMessage {
  return {
    topic,
    partition,
    offset: Number(m.offset),
    key: m.key === null || m.key === undefined ? undefined : m.key.toString('utf8'),
    headers: headersFrom(m.headers),
    value: m.value ?? EMPTY,
    timestamp: Number(m.timestamp),
  };
}
