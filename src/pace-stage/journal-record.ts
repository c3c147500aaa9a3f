import { utf8 } from '../core/message.js';
import type { ShardRecord } from '../shard/rules.js';

/**
 * A shard record as its log holds it: the JSON array `[key, at, type, data]` in UTF-8 (`data` left out when
 * the record has none). Every store journals these bytes; the host encodes a record before it takes an LSN,
 * and decodes each one a replay hands back.
 */
export const encodeRecord = (r: ShardRecord): Buffer => Buffer.from(JSON.stringify([r.key, r.at, r.type, r.data]));

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
  const start = JSON.stringify([r.key, r.at, r.type, head]); // ends `}]`: the field goes in their place
  const name = `${start.endsWith('{}]') ? '' : ','}${JSON.stringify(field)}:`;
  // A UTF-16 unit takes at most 3 bytes; a long start is measured rather than given three times its room.
  const room = start.length <= 1_024 ? start.length * 3 : Buffer.byteLength(start);
  const out = Buffer.allocUnsafe(room + name.length * 3 + text.length);
  let at = out.write(start, 0, 'utf8') - 2;
  at += out.write(name, at, 'utf8');
  out.set(text, at);
  at += text.length;
  at += out.write('}]', at, 'latin1');
  return out.subarray(0, at);
}

/** A record from its journaled bytes (see {@link encodeRecord}). */
export const decodeRecord = (bytes: Uint8Array): ShardRecord => {
  const [key, at, type, data] = JSON.parse(utf8(bytes)) as [string, number, string, unknown];
  return data === undefined ? { key, at, type } : { key, at, type, data };
};
