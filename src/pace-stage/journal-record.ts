import { utf8 } from '../core/message.js';
import type { ShardRecord } from '../shard/rules.js';

/**
 * A shard record as its log holds it: the JSON array `[key, at, type, data]` in UTF-8 (`data` left out when
 * the record has none). Every store journals these bytes; the host encodes a record before it takes an LSN,
 * and decodes each one a replay hands back.
 */
export const encodeRecord = (r: ShardRecord): Buffer => Buffer.from(JSON.stringify([r.key, r.at, r.type, r.data]));

/** The bytes `}]` that end a record whose data is an object. */
const END = Buffer.from('}]');

/**
 * {@link encodeRecord} of a record whose `data` is the object `head` with one field more, `field`, given as
 * the UTF-8 bytes of its JSON text (a delivery's payload that decoded as JSON): those bytes are journaled as
 * they are, and read back as the value they were decoded to live. Nothing encodes the value again.
 */
export function encodeRecordWithText(
  r: Omit<ShardRecord, 'data'>,
  head: object,
  field: string,
  text: Uint8Array,
): Buffer {
  const start = JSON.stringify([r.key, r.at, r.type, head]); // ends `}]`: cut, the field goes in its place
  const prefix = `${start.slice(0, -2)}${start.endsWith('{}]') ? '' : ','}${JSON.stringify(field)}:`;
  const at = Buffer.byteLength(prefix);
  const out = Buffer.allocUnsafe(at + text.length + END.length);
  out.write(prefix, 0);
  out.set(text, at);
  out.set(END, at + text.length);
  return out;
}

/** A record from its journaled bytes (see {@link encodeRecord}). */
export const decodeRecord = (bytes: Uint8Array): ShardRecord => {
  const [key, at, type, data] = JSON.parse(utf8(bytes)) as [string, number, string, unknown];
  return data === undefined ? { key, at, type } : { key, at, type, data };
};
