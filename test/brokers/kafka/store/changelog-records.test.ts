import { describe, expect, it } from 'vitest';
import {
  FRAGMENT_HEADER_BYTES,
  PACK_ENTRY_BYTES,
  PACK_HEADER_BYTES,
  RecordAssembler,
  changelogValues,
  fragmentsOf,
} from '../../../../src/brokers/kafka/store/changelog-records.js';
import { SluiceError } from '../../../../src/core/errors.js';

const bytes = (n: number, fill: number): Buffer => Buffer.alloc(n, fill);

/** The records the assembler gives back for `values`, read in order. */
function readBack(values: readonly (Buffer | null)[]): { lsn: number; record: Buffer }[] {
  const out: { lsn: number; record: Buffer }[] = [];
  const assembler = new RecordAssembler('test', (lsn, record) => out.push({ lsn, record: Buffer.from(record) }));
  values.forEach((v, offset) => assembler.read(v, offset));
  expect(assembler.whole).toBe(true);
  return out;
}

const corrupt = (values: readonly (Buffer | null)[]): unknown => {
  try {
    readBack(values);
  } catch (error) {
    return error;
  }
  return undefined;
};

describe('kafka changelog records', () => {
  it('packs small records into one message each holding as many as fit, and reads them back in LSN order', () => {
    const records = Array.from({ length: 1_000 }, (_, i) => ({ lsn: 41 + i, record: bytes(i % 50, i % 256) }));
    const values = changelogValues(records, 16 * 1024);
    const total = records.reduce((s, r) => s + PACK_ENTRY_BYTES + r.record.length, 0);
    expect(values.length).toBe(Math.ceil(total / (16 * 1024 - PACK_HEADER_BYTES)));
    for (const v of values) expect(v.length).toBeLessThanOrEqual(16 * 1024);
    expect(readBack(values)).toEqual(records);
  });

  it('splits a record too long for a message into fragments between packs, and an empty record is a record', () => {
    const records = [
      { lsn: 1, record: bytes(10, 1) },
      { lsn: 2, record: bytes(3_000, 2) },
      { lsn: 3, record: bytes(0, 0) },
      { lsn: 4, record: bytes(1_000 - PACK_HEADER_BYTES - PACK_ENTRY_BYTES, 4) }, // fills a message exactly
      { lsn: 5, record: bytes(1_000 - PACK_HEADER_BYTES - PACK_ENTRY_BYTES + 1, 5) }, // one byte too many
    ];
    const values = changelogValues(records, 1_000);
    for (const v of values) expect(v.length).toBeLessThanOrEqual(1_000);
    const formats = values.map((v) => v[0]);
    // [1] packed, [2] in 4 fragments, [3] packed, [4] packed alone, [5] in 2 fragments
    expect(formats).toEqual([2, 1, 1, 1, 1, 2, 2, 1, 1]);
    expect(readBack(values)).toEqual(records);
  });

  it('reads fragments written one record to a message (an earlier form) beside packs', () => {
    const room = 100 - FRAGMENT_HEADER_BYTES;
    const values = [
      ...fragmentsOf(7, bytes(250, 7), room),
      ...changelogValues([{ lsn: 8, record: bytes(5, 8) }], 100),
      ...fragmentsOf(9, bytes(20, 9), room),
    ];
    expect(readBack(values).map((r) => [r.lsn, r.record.length])).toEqual([
      [7, 250],
      [8, 5],
      [9, 20],
    ]);
  });

  it('starts at the first whole record when the partition begins inside a fragmented one', () => {
    const head = fragmentsOf(3, bytes(300, 3), 100);
    const values = [...head.slice(1), ...changelogValues([{ lsn: 4, record: bytes(1, 4) }], 100)];
    expect(readBack(values).map((r) => r.lsn)).toEqual([4]);
  });

  it('refuses missing or repeated records, cut packs and what is no record, with STORE_CORRUPT naming the offset', () => {
    const pack = (lsn: number, n: number): Buffer =>
      changelogValues(
        Array.from({ length: n }, (_, i) => ({ lsn: lsn + i, record: bytes(4, i) })),
        1_000,
      )[0]!;
    const cut = pack(1, 3).subarray(0, PACK_HEADER_BYTES + 10);
    const padded = Buffer.concat([pack(1, 3), Buffer.alloc(1)]);
    const cases: [readonly (Buffer | null)[], RegExp][] = [
      [[pack(1, 3), pack(5, 1)], /at offset 1: after LSN 3 comes LSN 5/],
      [[pack(1, 3), pack(3, 1)], /after LSN 3 comes LSN 3/],
      [[cut], /at offset 0: record 2 of a pack of 3 goes past its end/],
      [[padded], /1 bytes after a pack's 3 records/],
      [[pack(1, 1), fragmentsOf(2, bytes(30, 0), 10)[0]!, pack(3, 1)], /LSN 2 is cut short at part 1 of 3/],
      [[null], /not a shard log record/],
      [[Buffer.from([9, 0, 0])], /format 1 or 2, got 9/],
    ];
    for (const [values, message] of cases) {
      const error = corrupt(values);
      expect(error).toBeInstanceOf(SluiceError);
      expect((error as SluiceError).code).toBe('STORE_CORRUPT');
      expect((error as SluiceError).message).toMatch(message);
    }
  });
});
