import { SluiceError } from '../../core/errors.js';
import { readU64LE, writeU64LE } from '../../core/u64.js';

/**
 * A shard log's record in its changelog partition: one Kafka message, or several in a row (one transaction)
 * for a record longer than a message may be. Each message's value is
 * `[format u8 = 1][lsn u64][part u32][parts u32][bytes]`, little-endian: the LSN is ours, since Kafka offsets
 * are not dense under transactions (each commit marker takes an offset).
 */
export const FRAGMENT_HEADER_BYTES = 17;
const FORMAT = 1;

/** The messages' values for one record, each holding at most `maxBytes` of it (an empty record is one message). */
export function fragmentsOf(lsn: number, record: Uint8Array, maxBytes: number): Buffer[] {
  const parts = Math.max(1, Math.ceil(record.length / maxBytes));
  const out: Buffer[] = [];
  for (let part = 0; part < parts; part++) {
    const bytes = record.subarray(part * maxBytes, Math.min(record.length, (part + 1) * maxBytes));
    const value = Buffer.allocUnsafe(FRAGMENT_HEADER_BYTES + bytes.length);
    value.writeUInt8(FORMAT, 0);
    writeU64LE(value, lsn, 1);
    value.writeUInt32LE(part, 9);
    value.writeUInt32LE(parts, 13);
    value.set(bytes, FRAGMENT_HEADER_BYTES);
    out.push(value);
  }
  return out;
}

/** One message of a record, read back. */
export interface Fragment {
  readonly lsn: number;
  readonly part: number;
  readonly parts: number;
  readonly bytes: Buffer;
}

/** Reads a changelog message's value; `where` names it in the error. */
export function readFragment(value: Buffer | null, where: string): Fragment {
  if (value === null || value.length < FRAGMENT_HEADER_BYTES || value.readUInt8(0) !== FORMAT)
    throw new SluiceError('STORE_CORRUPT', `${where}: not a shard log record (format ${FORMAT})`);
  const part = value.readUInt32LE(9);
  const parts = value.readUInt32LE(13);
  if (part >= parts) throw new SluiceError('STORE_CORRUPT', `${where}: part ${part} of ${parts}`);
  return { lsn: readU64LE(value, 1), part, parts, bytes: value.subarray(FRAGMENT_HEADER_BYTES) };
}

/**
 * Puts records back together from their messages, in offset order, and checks that they follow one another:
 * LSNs one apart, a record's parts in order and whole. The first message read may be any record's first part
 * (what came before was deleted under a snapshot); parts of a record before it are skipped.
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

  add(f: Fragment): void {
    if (!this.started) {
      if (f.part !== 0) return; // the tail of a record whose head was deleted
      this.started = true;
      this.lsn = f.lsn - 1;
    }
    if (this.expected === 0) {
      if (f.part !== 0 || f.lsn !== this.lsn + 1)
        throw new SluiceError(
          'STORE_CORRUPT',
          `${this.where}: after LSN ${this.lsn} comes LSN ${f.lsn} part ${f.part} (records are missing or repeated)`,
        );
      this.lsn = f.lsn;
      this.expected = f.parts;
    } else if (f.lsn !== this.lsn || f.part !== this.parts.length) {
      throw new SluiceError(
        'STORE_CORRUPT',
        `${this.where}: LSN ${this.lsn} is cut short at part ${this.parts.length} of ${this.expected} (LSN ${f.lsn} part ${f.part} follows)`,
      );
    }
    this.parts.push(f.bytes);
    if (this.parts.length === this.expected) {
      const record = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts);
      this.parts = [];
      this.expected = 0;
      this.emit(this.lsn, record);
    }
  }

  /** True when no record is half read. */
  get whole(): boolean {
    return this.expected === 0;
  }

  /** The LSN of the last whole record, 0 before any. */
  get lastLsn(): number {
    return this.expected === 0 ? this.lsn : this.lsn - 1;
  }
}
