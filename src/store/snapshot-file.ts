import { crc32c } from '@node-rs/crc32';
import path from 'node:path';
import { SluiceError } from '../core/errors.js';
import { readU64LE, writeU64LE } from '../core/u64.js';
import type { FileSystem } from './fs.js';
import { writeFileAtomic } from './sync-file.js';

/** A snapshot file: `[lsn u64][crc32c u32][length u32][state]`; the CRC covers LSN and state. */
const HEADER = 16;
const NAME = 'snapshot';

/** CRC32C of the LSN and of length + state, without copying them together. */
const checksum = (buf: Buffer): number => crc32c(buf.subarray(12), crc32c(buf.subarray(0, 8)));

/** Writes the snapshot atomically: a temp file, fsynced, renamed over the old one, the directory fsynced. */
export async function writeSnapshotFile(fs: FileSystem, dir: string, lsn: number, state: Uint8Array): Promise<void> {
  const buf = Buffer.allocUnsafe(HEADER + state.length);
  writeU64LE(buf, lsn, 0);
  buf.writeUInt32LE(state.length, 12);
  buf.set(state, HEADER);
  buf.writeUInt32LE(checksum(buf), 8);
  await writeFileAtomic(fs, dir, NAME, buf);
}

/** Reads the snapshot; a damaged one is `STORE_CORRUPT` (it was renamed into place whole, so it never tears). */
export async function readSnapshotFile(
  fs: FileSystem,
  dir: string,
): Promise<{ lsn: number; state: Buffer } | undefined> {
  const buf = await fs.readFile(path.join(dir, NAME)).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (!buf) return undefined;
  const ok =
    buf.length >= HEADER && buf.readUInt32LE(12) === buf.length - HEADER && checksum(buf) === buf.readUInt32LE(8);
  if (!ok) throw new SluiceError('STORE_CORRUPT', `store ${dir}: the snapshot is damaged`);
  return { lsn: readU64LE(buf, 0), state: buf.subarray(HEADER) };
}
