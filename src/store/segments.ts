import path from 'node:path';
import { SluiceError } from '../core/errors.js';
import { anyFrameAfter, readFrame } from './frame.js';
import type { FileSystem } from './fs.js';

/** A segment file: named by the LSN of its first record. */
export interface Segment {
  readonly file: string;
  readonly firstLsn: number;
}

const SUFFIX = '.seg';
export const segmentName = (firstLsn: number): string => `${String(firstLsn).padStart(20, '0')}${SUFFIX}`;

/** The segments of a shard directory, oldest first. */
export async function listSegments(fs: FileSystem, dir: string): Promise<Segment[]> {
  const names = (await fs.readdir(dir)).filter((n) => n.endsWith(SUFFIX)).sort();
  return names.map((n) => ({ file: path.join(dir, n), firstLsn: Number(n.slice(0, -SUFFIX.length)) }));
}

/**
 * Recovers a shard's segments: checks every frame (length, CRC, the next LSN in sequence). A bad frame in
 * the last segment with nothing good after it is a torn tail, cut off here (the file is truncated and
 * synced); a bad frame with good records after it, or in a segment that a later one follows (a segment is
 * made only once the records before it are durable), is corruption: `STORE_CORRUPT`, and nothing is
 * changed. Returns the LSN the next record gets and the bytes in the last segment.
 */
export async function recover(fs: FileSystem, dir: string, segments: readonly Segment[]): Promise<{ nextLsn: number; tailBytes: number }> {
  let expected = segments[0]?.firstLsn ?? 1;
  let tailBytes = 0;
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    if (segment.firstLsn !== expected) {
      throw new SluiceError('STORE_CORRUPT', `store ${dir}: segment ${path.basename(segment.file)} starts at LSN ${segment.firstLsn}, expected ${expected}`);
    }
    const buf = await fs.readFile(segment.file);
    let pos = 0;
    while (pos < buf.length) {
      const frame = readFrame(buf, pos, expected);
      if (!frame.ok) break;
      expected++;
      pos = frame.next;
    }
    tailBytes = pos;
    if (pos === buf.length) continue;
    // A bad frame at `pos`. A segment is made only once every record before it is durable, so a bad frame
    // in a segment that has a later one is damage to a durable record, whatever the later one holds (its
    // first write may itself have torn): never a torn tail to cut off.
    const later = segments.slice(i + 1);
    if (later.length > 0 || anyFrameAfter(buf, pos + 1, expected)) {
      throw new SluiceError('STORE_CORRUPT', `store ${dir}: bad record at byte ${pos} of ${path.basename(segment.file)} (LSN ${expected}) with ${later.length > 0 ? 'a later segment after it' : 'good records after it'}`);
    }
    await truncate(fs, segment.file, pos);
    break;
  }
  return { nextLsn: expected, tailBytes };
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
