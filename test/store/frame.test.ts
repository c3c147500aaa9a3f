import { describe, expect, it } from 'vitest';
import { HEADER_BYTES, MAX_RECORD_BYTES, anyFrameAfter, encodeFrame, readFrame } from '../../src/store/frame.js';

const NONE = { ok: false };
const bytes = (text: string) => Buffer.from(text);

describe('record frames', () => {
  it('reads back what was written: LSN, payload and where the next frame starts, for LSNs past 2^32 too', () => {
    for (const lsn of [1, 7, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1, 2 ** 40 + 12_345, Number.MAX_SAFE_INTEGER]) {
      const frame = encodeFrame(lsn, bytes(`record ${lsn}`));
      expect(frame.length).toBe(HEADER_BYTES + `record ${lsn}`.length);
      expect(readFrame(frame, 0, lsn)).toStrictEqual({
        ok: true,
        lsn,
        payload: bytes(`record ${lsn}`),
        next: frame.length,
      });
    }
  });

  it('reads an empty payload that ends exactly at the end of the buffer', () => {
    const frame = encodeFrame(3, Buffer.alloc(0));
    expect(frame.length).toBe(HEADER_BYTES);
    expect(readFrame(frame, 0, 3)).toStrictEqual({ ok: true, lsn: 3, payload: Buffer.alloc(0), next: HEADER_BYTES });
    expect(anyFrameAfter(Buffer.concat([bytes('garbage'), frame]), 0, 3)).toBe(true);
  });

  it('reads a frame at its position among others', () => {
    const a = encodeFrame(1, bytes('first'));
    const b = encodeFrame(2, bytes('second'));
    const buf = Buffer.concat([a, b]);
    const first = readFrame(buf, 0, 1);
    expect(first).toStrictEqual({ ok: true, lsn: 1, payload: bytes('first'), next: a.length });
    expect(readFrame(buf, a.length, 2)).toStrictEqual({ ok: true, lsn: 2, payload: bytes('second'), next: buf.length });
  });

  it('refuses every torn prefix of a frame', () => {
    const frame = encodeFrame(5, bytes('a record that was half written'));
    for (let cut = 0; cut < frame.length; cut++)
      expect(readFrame(frame.subarray(0, cut), 0, 5), `cut at ${cut}`).toStrictEqual(NONE);
  });

  it('refuses a frame with a valid CRC whose LSN is outside the range asked for', () => {
    const frame = encodeFrame(7, bytes('seven'));
    expect(readFrame(frame, 0, 8)).toStrictEqual(NONE); // an older record where a newer one belongs
    expect(readFrame(frame, 0, 6)).toStrictEqual(NONE); // a record from the future
    expect(readFrame(frame, 0, 5, 6)).toStrictEqual(NONE);
    expect(readFrame(frame, 0, 8, 9)).toStrictEqual(NONE);
    expect(readFrame(frame, 0, 6, 8).ok).toBe(true);
    expect(readFrame(frame, 0, 7, 7).ok).toBe(true);
    // A high word that differs is a different LSN: 7 + 2^32 is not 7.
    expect(readFrame(encodeFrame(2 ** 32 + 7, bytes('seven')), 0, 7)).toStrictEqual(NONE);
  });

  it('refuses a frame with any single bit flipped', () => {
    const frame = encodeFrame(9, bytes('nine'));
    for (let bit = 0; bit < frame.length * 8; bit++) {
      const bad = Buffer.from(frame);
      bad[bit >> 3]! ^= 1 << (bit & 7);
      const read = readFrame(bad, 0, 9);
      // A flip in the length makes a frame that runs past the buffer; anywhere else the CRC or the LSN check fails.
      expect(read, `bit ${bit}`).toStrictEqual(NONE);
    }
  });

  it("reads a frame whose CRC is wrong only when told not to check it (the simulator's broken engine)", () => {
    const bad = encodeFrame(9, bytes('nine'));
    bad[HEADER_BYTES]! ^= 1; // a payload bit: the CRC no longer matches
    expect(readFrame(bad, 0, 9)).toStrictEqual(NONE);
    expect(readFrame(bad, 0, 9, 9, true)).toStrictEqual(NONE);
    expect(readFrame(bad, 0, 9, 9, false)).toStrictEqual({
      ok: true,
      lsn: 9,
      payload: Buffer.from('oine'),
      next: bad.length,
    });
  });

  it('takes records up to 64 MiB and refuses a length beyond it, even where the buffer holds that much', () => {
    expect(MAX_RECORD_BYTES).toBe(64 * 1024 * 1024);
    const big = encodeFrame(1, Buffer.alloc(1024 * 1024, 1));
    expect(readFrame(big, 0, 1).ok).toBe(true);
    const max = encodeFrame(2, Buffer.alloc(MAX_RECORD_BYTES, 2));
    expect(readFrame(max, 0, 2).ok).toBe(true);
    // A frame one byte over the maximum, whole and with a good CRC: still refused (a length read from garbage).
    const over = encodeFrame(3, Buffer.alloc(MAX_RECORD_BYTES + 1, 3));
    expect(readFrame(over, 0, 3)).toStrictEqual(NONE);
  });

  it('finds a good frame after garbage, but not before the position it starts from or outside the LSNs believed', () => {
    const frame = encodeFrame(50, bytes('fifty'));
    const buf = Buffer.concat([Buffer.alloc(13, 0xab), frame]);
    expect(anyFrameAfter(buf, 0, 10)).toBe(true);
    expect(anyFrameAfter(buf, 13, 50)).toBe(true);
    expect(anyFrameAfter(buf, 14, 10)).toBe(false);
    expect(anyFrameAfter(buf, 0, 51)).toBe(false); // older than what recovery looks for
    expect(anyFrameAfter(buf, 0, 50 - 100_000_000 - 1)).toBe(false); // too far ahead to be believed
    expect(anyFrameAfter(Buffer.alloc(64), 0, 1)).toBe(false);
  });
});
