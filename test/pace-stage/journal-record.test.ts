/**
 * A shard record's journaled bytes. A paced delivery decoded as JSON is journaled with its payload's own
 * bytes in the event's place: read back, the record is the one applied live, whatever JSON text the
 * payload held (spacing, escapes, any key, any depth).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeRecord, encodeRecordWithText } from '../../src/pace-stage/journal-record.js';

/** A JSON text of `value`, spaced or not. */
const text = (value: unknown, space: number): Buffer =>
  Buffer.from(`${' '.repeat(space)}${JSON.stringify(value, null, space)}\n`);

describe('encodeRecordWithText', () => {
  it('reads back as the record with the field parsed from its text, for any JSON and any head', () => {
    const head = fc.dictionary(fc.string({ unit: 'binary' }), fc.jsonValue(), { maxKeys: 4 });
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary', minLength: 400, maxLength: 2_000 })),
        fc.integer({ min: 0, max: 2 ** 40 }),
        fc.string(),
        head,
        fc.string({ unit: 'binary' }),
        fc.jsonValue(),
        fc.nat(3),
        (key, at, type, h, field, value, space) => {
          fc.pre(!Object.hasOwn(h, field));
          const bytes = encodeRecordWithText({ key, at, type }, h, field, text(value, space));
          const data: Record<string, unknown> = JSON.parse(JSON.stringify(h));
          Object.defineProperty(data, field, {
            value: JSON.parse(JSON.stringify(value)),
            enumerable: true,
            writable: true,
            configurable: true,
          });
          expect(decodeRecord(bytes)).toStrictEqual({ key, at, type, data });
        },
      ),
      { numRuns: 500 },
    );
  });

  it('keeps what JSON text holds beyond a value JSON.stringify writes: -0, a repeated key, escapes, bytes that are not UTF-8', () => {
    const payload = Buffer.concat([
      Buffer.from('{ "n": -0, "k": 1, "k": 2, "__proto__": [], "s": "\\u00e9\\ud800', 'utf8'),
      Buffer.from([0xff, 0xc3]),
      Buffer.from('" }', 'utf8'),
    ]);
    const live: unknown = JSON.parse(payload.toString('utf8'));
    const record = decodeRecord(encodeRecordWithText({ key: 'k', at: 1, type: 'event' }, { r: '' }, 'e', payload));
    const event = (record.data as { e: unknown }).e;
    expect(event).toStrictEqual(live);
    expect(Object.is((event as { n: number }).n, -0)).toBe(true);
    expect(Object.keys(event as object)).toEqual(['n', 'k', '__proto__', 's']);
  });

  it('writes a field into an empty head', () => {
    expect(decodeRecord(encodeRecordWithText({ key: 'k', at: 0, type: 't' }, {}, 'e', text([1], 0)))).toStrictEqual({
      key: 'k',
      at: 0,
      type: 't',
      data: { e: [1] },
    });
  });
});
