import { SluiceError } from '../../../core/errors.js';
import { readU64LE, writeU64LE } from '../../../core/u64.js';

/**
 * A shard log's records in its changelog partition. A message's value is one of two forms, little-endian,
 * told apart by its first byte:
 *
 * - a pack, `[format u8 = 2][first lsn u64][count u32]` then `count` times `[length u32][bytes]`: whole
 *   records of consecutive LSNs, as many as fit in one message. Records go out packed: a transaction of a
 *   thousand small records is a message or two, not a thousand (kafkajs's cost of producing and reading a
 *   message, and the broker's, is per message, and dwarfs a small record's own);
 * - a fragment, `[format u8 = 1][lsn u64][part u32][parts u32][bytes]`: a record longer than one message may
 *   be is split over several in a row (one transaction), each a fragment.
 *
 * The LSN is ours: Kafka offsets are not dense under transactions (each commit marker takes an offset).
 */
export const FRAGMENT_HEADER_BYTES = 17;
/** A pack's header; each record in it takes `PACK_ENTRY_BYTES` more than its bytes. */
export const PACK_HEADER_BYTES = 13;
export const PACK_ENTRY_BYTES = 4;
const FRAGMENT = 1;
const PACK = 2;

/** A record to write: its LSN and bytes. */
export interface ChangelogRecord {
  readonly lsn: number;
  readonly record: Uint8Array;
}

/**
 * The messages' values for records of consecutive LSNs, in order, each value at most `maxBytes`: whole
 * records packed together, and a record too long to fit in a pack alone split into fragments.
 */
export function changelogValues(records: readonly ChangelogRecord[], maxBytes: number): Buffer[] {
  const out: Buffer[] = [];
  let from = 0;
  let bytes = PACK_HEADER_BYTES;
  for (let i = 0; i < records.length; i++) {
    const size = PACK_ENTRY_BYTES + records[i]!.record.length;
    if (PACK_HEADER_BYTES + size > maxBytes) {
      if (i > from) out.push(pack(records, from, i, bytes));
      for (const f of fragmentsOf(records[i]!.lsn, records[i]!.record, maxBytes - FRAGMENT_HEADER_BYTES)) out.push(f);
      from = i + 1;
      bytes = PACK_HEADER_BYTES;
    } else if (bytes + size > maxBytes) {
      out.push(pack(records, from, i, bytes));
      from = i;
      bytes = PACK_HEADER_BYTES + size;
    } else bytes += size;
  }
  if (records.length > from) out.push(pack(records, from, records.length, bytes));
  return out;
}

/** Records `from` to `to` (not included) as one pack of `bytes` bytes. */
function pack(records: readonly ChangelogRecord[], from: number, to: number, bytes: number): Buffer {
  const value = Buffer.allocUnsafe(bytes);
  value.writeUInt8(PACK, 0);
  writeU64LE(value, records[from]!.lsn, 1);
  value.writeUInt32LE(to - from, 9);
  let at = PACK_HEADER_BYTES;
  for (let i = from; i < to; i++) {
    const record = records[i]!.record;
    value.writeUInt32LE(record.length, at);
    value.set(record, at + PACK_ENTRY_BYTES);
    at += PACK_ENTRY_BYTES + record.length;
  }
  return value;
}

/** The fragments of one record, each holding at most `maxBytes` of it (an empty record is one fragment). */
export function fragmentsOf(lsn: number, record: Uint8Array, maxBytes: number): Buffer[] {
  const parts = Math.max(1, Math.ceil(record.length / maxBytes));
  const out: Buffer[] = [];
  for (let part = 0; part < parts; part++) {
    const bytes = record.subarray(part * maxBytes, Math.min(record.length, (part + 1) * maxBytes));
    const value = Buffer.allocUnsafe(FRAGMENT_HEADER_BYTES + bytes.length);
    value.writeUInt8(FRAGMENT, 0);
    writeU64LE(value, lsn, 1);
    value.writeUInt32LE(part, 9);
    value.writeUInt32LE(parts, 13);
    value.set(bytes, FRAGMENT_HEADER_BYTES);
    out.push(value);
  }
  return out;
}

/**
 * Puts records back together from their messages, in offset order, and checks that they follow one another:
 * LSNs one apart, a record's fragments in order and whole, a pack's records within it. The first message read
 * may be any record's first fragment, or a pack (what came before was deleted under a snapshot); fragments of
 * a record before it are skipped.
 */
export class RecordAssembler {
  private lsn = 0;
  private parts: Buffer[] = [];
  private expected = 0;
  private started = false;

  constructor(
    private readonly where: string,
    private readonly emit: (lsn: number, record: Buffer) => void,
  ) {}

  /** Reads a changelog message's value, at `offset` (named in an error). */
  read(value: Buffer | null, offset: string | number): void {
    const format = value !== null && value.length > 0 ? value.readUInt8(0) : undefined;
    if (format === PACK && value!.length >= PACK_HEADER_BYTES) return this.unpack(value!, offset);
    if (format === FRAGMENT && value!.length >= FRAGMENT_HEADER_BYTES) return this.fragment(value!, offset);
    throw this.corrupt(offset, `not a shard log record (format ${FRAGMENT} or ${PACK}, got ${format ?? 'none'})`);
  }

  /** True when no record is half read. */
  get whole(): boolean {
    return this.expected === 0;
  }

  /** The LSN of the last whole record, 0 before any. */
  get lastLsn(): number {
    return this.expected === 0 ? this.lsn : this.lsn - 1;
  }

  private unpack(value: Buffer, offset: string | number): void {
    const first = readU64LE(value, 1);
    const count = value.readUInt32LE(9);
    if (count === 0) throw this.corrupt(offset, 'a pack of no records');
    let at = PACK_HEADER_BYTES;
    for (let i = 0; i < count; i++) {
      const length = at + PACK_ENTRY_BYTES <= value.length ? value.readUInt32LE(at) : -1;
      const end = at + PACK_ENTRY_BYTES + length;
      if (length < 0 || end > value.length)
        throw this.corrupt(offset, `record ${i + 1} of a pack of ${count} goes past its end`);
      this.whole1(first + i, value.subarray(at + PACK_ENTRY_BYTES, end), offset);
      at = end;
    }
    if (at !== value.length) throw this.corrupt(offset, `${value.length - at} bytes after a pack's ${count} records`);
  }

  /** A record that came whole (in a pack). */
  private whole1(lsn: number, bytes: Buffer, offset: string | number): void {
    if (!this.started) {
      this.started = true;
      this.lsn = lsn - 1;
    }
    if (this.expected !== 0)
      throw this.corrupt(
        offset,
        `LSN ${this.lsn} is cut short at part ${this.parts.length} of ${this.expected} (LSN ${lsn} follows)`,
      );
    if (lsn !== this.lsn + 1) throw this.corrupt(offset, this.notNext(lsn, 0));
    this.lsn = lsn;
    this.emit(lsn, bytes);
  }

  private fragment(value: Buffer, offset: string | number): void {
    const lsn = readU64LE(value, 1);
    const part = value.readUInt32LE(9);
    const parts = value.readUInt32LE(13);
    if (part >= parts) throw this.corrupt(offset, `part ${part} of ${parts}`);
    if (!this.started) {
      if (part !== 0) return; // the tail of a record whose head was deleted
      this.started = true;
      this.lsn = lsn - 1;
    }
    if (this.expected === 0) {
      if (part !== 0 || lsn !== this.lsn + 1) throw this.corrupt(offset, this.notNext(lsn, part));
      this.lsn = lsn;
      this.expected = parts;
    } else if (lsn !== this.lsn || part !== this.parts.length) {
      throw this.corrupt(
        offset,
        `LSN ${this.lsn} is cut short at part ${this.parts.length} of ${this.expected} (LSN ${lsn} part ${part} follows)`,
      );
    }
    this.parts.push(value.subarray(FRAGMENT_HEADER_BYTES));
    if (this.parts.length === this.expected) {
      const record = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts);
      this.parts = [];
      this.expected = 0;
      this.emit(this.lsn, record);
    }
  }

  private notNext(lsn: number, part: number): string {
    return `after LSN ${this.lsn} comes LSN ${lsn} part ${part} (records are missing or repeated)`;
  }

  private corrupt(offset: string | number, what: string): SluiceError {
    return new SluiceError('STORE_CORRUPT', `${this.where} at offset ${offset}: ${what}`);
  }
}
