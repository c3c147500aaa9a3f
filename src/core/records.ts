import { SluiceError } from './errors.js';

/**
 * The longest record a shard log takes, in bytes (64 MiB): every store takes a record of any length up to it
 * (none too: an empty record is a record), and refuses a longer one before giving it an LSN.
 */
export const MAX_RECORD_BYTES = 64 * 1024 * 1024;

/**
 * Checks a record handed to `ShardLog.append` before it takes an LSN, so that a refused one leaves no gap.
 *
 * @throws TypeError when `record` is not a `Uint8Array`.
 * @throws {@link SluiceError} `SEND_INVALID` when it is longer than {@link MAX_RECORD_BYTES}.
 */
export function checkRecord(record: Uint8Array): void {
  if (!(record instanceof Uint8Array))
    throw new TypeError(`ShardLog.append: a record is a Uint8Array, got ${typeof record}`);
  if (record.length > MAX_RECORD_BYTES)
    throw new SluiceError(
      'SEND_INVALID',
      `ShardLog.append: a record may take at most MAX_RECORD_BYTES (${MAX_RECORD_BYTES}) bytes, got ${record.length}`,
    );
}
