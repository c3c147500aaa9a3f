import { crc32c } from '@node-rs/crc32';
import { MAX_RECORD_BYTES } from '../core/records.js';
import { readU64LE, writeU64LE } from '../core/u64.js';

/**
 * A record on disk: `[length u32][crc32c u32][lsn u64][payload]`, little-endian. The CRC covers the LSN and
 * the payload, so a frame read at the wrong place, torn, zero-filled or with a flipped bit does not pass.
 */
export const HEADER_BYTES = 16;
/** Anything longer is not a record: a length read from garbage. */
export { MAX_RECORD_BYTES };

export function encodeFrame(lsn: number, payload: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(HEADER_BYTES + payload.length);
  frame.writeUInt32LE(payload.length, 0);
  writeU64LE(frame, lsn, 8);
  frame.set(payload, HEADER_BYTES);
  frame.writeUInt32LE(crc32c(frame.subarray(8)), 4);
  return frame;
}

/** What a scan found at one position: a good frame, or the reason there is none. */
export type FrameRead = { ok: true; lsn: number; payload: Buffer; next: number } | { ok: false };

/** Reads the frame at `pos` of `buf` with an LSN within `minLsn..maxLsn`, as {@link readFrame} does. */
export type FrameReader = (buf: Buffer, pos: number, minLsn: number, maxLsn: number) => FrameRead;

/**
 * Reads the frame at `pos` of `buf`, checking its length, its LSN (within `minLsn..maxLsn`) and its CRC
 * (unless `checkCrc` is false: only the simulator's `skipCrc` engine reads so, see store-faults.ts).
 */
export function readFrame(buf: Buffer, pos: number, minLsn: number, maxLsn = minLsn, checkCrc = true): FrameRead {
  if (pos + HEADER_BYTES > buf.length) return { ok: false };
  const length = buf.readUInt32LE(pos);
  if (length > MAX_RECORD_BYTES || pos + HEADER_BYTES + length > buf.length) return { ok: false };
  const lsn = readU64LE(buf, pos + 8);
  if (lsn < minLsn || lsn > maxLsn) return { ok: false };
  const end = pos + HEADER_BYTES + length;
  if (checkCrc && crc32c(buf.subarray(pos + 8, end)) !== buf.readUInt32LE(pos + 4)) return { ok: false };
  return { ok: true, lsn, payload: buf.subarray(pos + HEADER_BYTES, end), next: end };
}

/**
 * True when a good frame with an LSN from `minLsn` on starts anywhere in `buf` from `from` on: then what
 * stands before it is corruption, not a torn tail. (LSNs far beyond `minLsn` are not believed.)
 */
export function anyFrameAfter(buf: Buffer, from: number, minLsn: number): boolean {
  // Stryker disable next-line ArithmeticOperator: scanning past the end is equivalent (readFrame refuses a position without a whole header)
  for (let pos = from; pos + HEADER_BYTES <= buf.length; pos++) {
    if (readFrame(buf, pos, minLsn, minLsn + 100_000_000).ok) return true;
  }
  return false;
}
