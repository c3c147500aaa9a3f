/**
 * Headers as a broker carries them (bytes, repeats, null values) and the text view handlers read.
 */
import type { KafkaMessage } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { KafkaInbound, headersTo } from '../../src/brokers/kafka/convert.js';
import { rawOf } from '../../src/core/message.js';

describe('a Kafka record', () => {
  // As kafkajs decodes one: header values are Buffers, a repeated header an array, a null value null.
  const record = {
    key: Buffer.from('c328ff', 'hex'),
    value: null,
    timestamp: '1700000000000',
    attributes: 0,
    offset: '41',
    size: 0,
    headers: {
      bin: Buffer.from('ff00fe8041', 'hex'),
      twice: [Buffer.from('a'), Buffer.from('b')],
      empty: null as unknown as Buffer,
    },
  };
  const m = new KafkaInbound('t', 2, record as unknown as KafkaMessage);

  it('reads as text: UTF-8, a repeated header its last value, a null value left out', () => {
    expect(m.headers).toEqual({ bin: Buffer.from('ff00fe8041', 'hex').toString('utf8'), twice: 'b' });
    expect(m.key).toBe(Buffer.from('c328ff', 'hex').toString('utf8'));
    expect(m.value.byteLength).toBe(0);
  });

  it('keeps its exact form in raw: key bytes, every value, a null value, a tombstone', () => {
    const raw = rawOf(m);
    expect(raw.key).toEqual(Buffer.from('c328ff', 'hex'));
    expect(raw.value).toBeNull();
    expect(raw.headers).toEqual(record.headers);
  });

  it('goes back to kafkajs with bytes as Buffers and a null value as an empty one (kafkajs cannot send null)', () => {
    const out = headersTo({
      text: 'x',
      bytes: new Uint8Array([255, 0]),
      twice: ['a', new Uint8Array([1])],
      gone: null,
    });
    expect(out).toEqual({
      text: 'x',
      bytes: Buffer.from([255, 0]),
      twice: ['a', Buffer.from([1])],
      gone: Buffer.alloc(0),
    });
    expect(Buffer.isBuffer(out.bytes)).toBe(true);
  });
});
