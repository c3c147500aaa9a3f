import path from 'node:path';
import { SluiceError } from '../core/errors.js';
import { writeU64LE } from '../core/u64.js';
import { anyFrameAfter, readFrame, type FrameReader } from './frame.js';
import type { FileSystem } from './fs.js';
import { storeDamaged } from './manifest.js';

/** A segment file: named by the LSN of its first record. */
export interface Segment {
  readonly file: string;
  readonly firstLsn: number;
}

const SUFFIX = '.seg';

/**
 * A segment file begins with a header, `["SLUSEG01"][first LSN u64]`, written and fdatasynced when the
 * segment is created, before any record: a segment emptied or zeroed whole is then told apart from a new
 * one whose first records had not reached the disk when the process died.
 */
export const SEGMENT_HEADER_BYTES = 16;
const MAGIC = Buffer.from('SLUSEG01');

export function segmentHeader(firstLsn: number): Buffer {
  const header = Buffer.alloc(SEGMENT_HEADER_BYTES);
  MAGIC.copy(header, 0);
  writeU64LE(header, firstLsn, 8);
  return header;
}

const headerOk = (buf: Buffer, firstLsn: number): boolean =>
  buf.length >= SEGMENT_HEADER_BYTES && buf.subarray(0, SEGMENT_HEADER_BYTES).equals(segmentHeader(firstLsn));
export const segmentName = (firstLsn: number): string => `${String(firstLsn).padStart(20, '0')}${SUFFIX}`;

/** The segments of a shard directory, oldest first. */
export async function listSegments(fs: FileSystem, dir: string): Promise<Segment[]> {
  const names = (await fs.readdir(dir)).filter((n) => n.endsWith(SUFFIX)).sort();
  return names.map((n) => ({ file: path.join(dir, n), firstLsn: Number(n.slice(0, -SUFFIX.length)) }));
}

/** What {@link scanSegments} found: where the log ends, and a torn tail to cut there, if any. */
export interface Scan {
  /** The LSN the next record gets. */
  readonly nextLsn: number;
  /** The bytes of good records in the last segment kept. */
  readonly tailBytes: number;
  /** A torn tail: the segment to cut at byte `at` (if any), and the later segments (empty or garbage) to remove. */
  readonly cut?: { readonly file?: string; readonly at?: number; readonly later: readonly Segment[] };
}

/** What the shard's manifest says that the scan needs. */
export interface ScanBounds {
  /**
   * The first LSN of the newest segment the manifest names. A newer one was made by a roll that died before
   * naming it, so it holds no record; without a whole header it is removed, not refused.
   */
  readonly namedSegment: number;
}

/**
 * Reads a shard's segments and checks every frame (length, CRC, the next LSN in sequence: `read`, by
 * default {@link readFrame}), changing nothing. A bad frame with nothing good after it is a torn tail,
 * returned as `cut` for {@link cutTornTail}; a bad frame with good records after it — in this segment or a
 * later one — or with a later segment named after its LSN is corruption: `STORE_CORRUPT`. So is a segment
 * that does not start where the one before it ended.
 */
export async function scanSegments(
  fs: FileSystem,
  dir: string,
  segments: readonly Segment[],
  bounds: ScanBounds,
  read: FrameReader = readFrame,
): Promise<Scan> {
  let expected = segments[0]?.firstLsn ?? 1;
  let tailBytes = 0;
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    if (segment.firstLsn !== expected) {
      throw storeDamaged(
        dir,
        `segment ${path.basename(segment.file)} starts at LSN ${segment.firstLsn}, but the one before it ends at LSN ${expected - 1}: records ${expected} to ${segment.firstLsn - 1} are missing (a segment was deleted)`,
      );
    }
    const buf = await fs.readFile(segment.file);
    if (!headerOk(buf, segment.firstLsn)) {
      // A segment that a roll created but did not name in the manifest before the process died holds no record.
      const leftover =
        i === segments.length - 1 && segment.firstLsn > bounds.namedSegment && !anyFrameAfter(buf, 0, expected);
      if (!leftover)
        throw storeDamaged(
          dir,
          `segment ${path.basename(segment.file)} has no header: it was ${buf.length === 0 ? 'emptied' : 'zeroed or overwritten'}`,
        );
      return { nextLsn: expected, tailBytes, cut: { later: [segment] } }; // the one before it ended whole
    }
    let pos = SEGMENT_HEADER_BYTES;
    while (pos < buf.length) {
      const frame = read(buf, pos, expected, expected);
      if (!frame.ok) break;
      expected++;
      pos = frame.next;
    }
    tailBytes = pos;
    if (pos === buf.length) continue;
    // A bad frame at `pos`.
    const later = segments.slice(i + 1);
    if (anyFrameAfter(buf, pos + 1, expected) || (await anyGoodSegment(fs, later, expected))) {
      throw new SluiceError(
        'STORE_CORRUPT',
        `store ${dir}: bad record at byte ${pos} of ${path.basename(segment.file)} (LSN ${expected}) with good records after it`,
      );
    }
    // A segment is made only once every record before its first LSN is durable: one named after this
    // record proves it was durable, so it is damaged, not torn.
    const proof = later.find((s) => s.firstLsn > expected);
    if (proof) {
      throw storeDamaged(
        dir,
        `bad record at byte ${pos} of ${path.basename(segment.file)} (LSN ${expected}), which was durable: segment ${path.basename(proof.file)} was made after it`,
      );
    }
    return { nextLsn: expected, tailBytes, cut: { file: segment.file, at: pos, later } };
  }
  return { nextLsn: expected, tailBytes };
}

/** Cuts a torn tail found by {@link scanSegments}: truncates its segment (synced), removes the later ones. */
export async function cutTornTail(fs: FileSystem, dir: string, cut: NonNullable<Scan['cut']>): Promise<void> {
  if (cut.file !== undefined) await truncate(fs, cut.file, cut.at ?? 0);
  for (const s of cut.later) await fs.rm(s.file); // empty or garbage only
  if (cut.later.length > 0) await fs.syncDirectory(dir);
}

async function anyGoodSegment(fs: FileSystem, segments: readonly Segment[], minLsn: number): Promise<boolean> {
  for (const s of segments) if (anyFrameAfter(await fs.readFile(s.file), 0, minLsn)) return true;
  return false;
}

async function truncate(fs: FileSystem, file: string, length: number): Promise<void> {
  const handle = await fs.open(file, 'r+');
  try {
    await handle.truncate(length);
    await handle.sync();
  } finally {
    await handle.close();
  }
}
