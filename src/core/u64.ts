/**
 * A whole number from 0 to 2^53 - 1 (an LSN, a reference) split into its low and high 32 bits, as the store's
 * files write it (a little-endian u64: two u32s) and the parked table keeps it (two typed arrays). Plain
 * arithmetic: JavaScript's bit operators work on 32 bits only.
 */
const TWO_TO_32 = 0x1_0000_0000;

/** The low 32 bits of `n`. */
export const low32 = (n: number): number => n % TWO_TO_32;

/** The bits of `n` above the low 32. */
export const high32 = (n: number): number => Math.floor(n / TWO_TO_32);

/** The number whose low 32 bits are `low` and whose bits above them are `high`. */
export const fromHalves = (low: number, high: number): number => low + high * TWO_TO_32;

/** Writes `n` at `offset` of `buf` as a little-endian u64. */
export function writeU64LE(buf: Buffer, n: number, offset: number): void {
  buf.writeUInt32LE(low32(n), offset);
  buf.writeUInt32LE(high32(n), offset + 4);
}

/** Reads the little-endian u64 at `offset` of `buf` (one written by `writeU64LE`). */
export function readU64LE(buf: Buffer, offset: number): number {
  return fromHalves(buf.readUInt32LE(offset), buf.readUInt32LE(offset + 4));
}
