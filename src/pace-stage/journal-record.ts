import { utf8 } from '../core/message.js';
import type { ShardRecord } from '../shard/rules.js';

/**
 * A shard record as its log holds it: the JSON array `[key, at, type, data]` in UTF-8 (`data` left out when
 * the record has none). Every store journals these bytes; the host encodes a record before it takes an LSN,
 * and decodes each one a replay hands back.
 */
export const encodeRecord = (r: ShardRecord): Buffer => Buffer.from(JSON.stringify([r.key, r.at, r.type, r.data]));

/** A record from its journaled bytes (see {@link encodeRecord}). */
export const decodeRecord = (bytes: Uint8Array): ShardRecord => {
  const [key, at, type, data] = JSON.parse(utf8(bytes)) as [string, number, string, unknown];
  return data === undefined ? { key, at, type } : { key, at, type, data };
};
