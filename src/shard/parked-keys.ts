/**
 * How the parked table holds a key: its slot holds the key's length in 16 bits, and the key arena its
 * UTF-8 bytes — or, escaped (length 0xFFFF), a 4-byte header and its bytes: for a key of 65,535 bytes or
 * more, and for a key with a lone surrogate, which UTF-8 would turn into U+FFFD, kept as UTF-16LE instead.
 * So a key comes back exactly as it was parked.
 */

/** A slot's key length meaning: escaped, the key's entry in the arena starts with a header. */
const ESCAPED = 0xffff;
/** In an escaped key's header: its bytes are UTF-16LE (else UTF-8); the rest of the header (COUNT) is their count. */
const WIDE = 0x8000_0000;
const COUNT = 0x7fff_ffff;

const wellFormed = (key: string): boolean => (key as unknown as { isWellFormed(): boolean }).isWellFormed();

/** The bytes a key's entry takes in `arena` at `offset`, given its slot's length. */
export const spanOf = (arena: Buffer, offset: number, length: number): number => {
  if (length !== ESCAPED) return length;
  return 4 + (arena.readUInt32LE(offset) & COUNT);
};

/** The key whose entry is in `arena` at `offset`, given its slot's length. */
export function keyOf(arena: Buffer, offset: number, length: number): string {
  if (length !== ESCAPED) return arena.toString('utf8', offset, offset + length);
  const header = arena.readUInt32LE(offset);
  const end = offset + 4 + (header & COUNT);
  return (header & WIDE) !== 0 ? arena.toString('utf16le', offset + 4, end) : arena.toString('utf8', offset + 4, end);
}

/** Writes a key's entry (as the arena holds it) into a scratch buffer that grows as needed. */
export class KeyEncoder {
  buf = Buffer.allocUnsafe(256);
  /** The bytes of the entry written last. */
  span = 0;

  /** Writes `key`'s entry at the buffer's start; returns the length its slot holds (ESCAPED for an escaped one). */
  encode(key: string): number {
    const wide = !wellFormed(key);
    // Stryker disable next-line BlockStatement,ConditionalExpression,EqualityOperator: the fast path saves counting the bytes; the path below writes the same entry
    if (!wide && 3 * key.length <= this.buf.length) {
      // Fits for sure (a UTF-16 unit takes at most 3 bytes of UTF-8): no need to count the bytes first.
      const n = this.buf.write(key); // UTF-8
      // Stryker disable next-line ConditionalExpression: as above
      if (n < ESCAPED) return (this.span = n);
    }
    const bytes = wide ? key.length * 2 : Buffer.byteLength(key);
    // Stryker disable next-line all: unreachable on Node 20 and later, whose strings hold at most 2^29 - 24 UTF-16 units (1.6 GB of UTF-8); kept for the header, which has 31 bits for the count
    if (bytes >= WIDE) throw new RangeError(`ParkedTable: a key may take at most 2 GiB, got ${bytes} bytes`);
    if (bytes + 4 > this.buf.length) this.buf = Buffer.allocUnsafe(2 * (bytes + 4));
    if (!wide && bytes < ESCAPED) return (this.span = this.buf.write(key)); // UTF-8
    this.buf.writeUInt32LE(wide ? bytes + WIDE : bytes, 0);
    this.span = 4 + this.buf.write(key, 4, wide ? 'utf16le' : undefined); // else UTF-8
    return ESCAPED;
  }

  /**
   * True when the entry written last is the one in `arena` at `offset`, whose slot holds `length`: the same
   * bytes, as many. (An escaped entry never equals a plain one: its header is not UTF-8.)
   */
  isAt(arena: Buffer, offset: number, length: number): boolean {
    return this.buf.compare(arena, offset, offset + spanOf(arena, offset, length), 0, this.span) === 0;
  }
}

/** FNV-1a over `length` bytes of `buf` from `offset`. */
export function hashBytes(buf: Buffer, length: number, offset = 0): number {
  let hash = 0x811c9dc5;
  for (let i = offset; i < offset + length; i++) hash = Math.imul(hash ^ buf[i]!, 0x01000193);
  return hash >>> 0;
}
