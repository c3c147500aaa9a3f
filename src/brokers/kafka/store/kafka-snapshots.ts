import { crc32c } from '@node-rs/crc32';
import { randomBytes } from 'node:crypto';
import { SluiceError } from '../../../core/errors.js';
import type { StoredMessage } from './store-client.js';

/**
 * A shard's snapshots in its partition of the compacted snapshots topic. A snapshot is written as chunks,
 * each a message keyed `chunk/<lsn>/<id>/<index>` (`id` random per write, so that two writes at one LSN never
 * mix), and then, once every chunk is committed, a head keyed `head` that names them: the head is what makes
 * a snapshot the current one. A crash half way through leaves chunks that no head names, and the previous
 * head still names its own chunks, which are tombstoned only once a newer head is committed. Compaction keeps
 * the newest message of each key, and drops tombstoned keys.
 */
export const HEAD_KEY = 'head';

/** What the head says. */
export interface SnapshotHead {
  readonly lsn: number;
  readonly id: string;
  readonly chunks: number;
  readonly bytes: number;
  readonly crc: number;
}

export const chunkKey = (head: Pick<SnapshotHead, 'lsn' | 'id'>, index: number): string =>
  `chunk/${head.lsn}/${head.id}/${index}`;

/** A snapshot's messages: its chunks (values of at most `chunkBytes`) and, last, its head. */
export function snapshotMessages(
  lsn: number,
  state: Uint8Array,
  chunkBytes: number,
): { head: SnapshotHead; chunks: { key: string; value: Buffer }[]; headValue: Buffer } {
  const chunks = Math.max(1, Math.ceil(state.length / chunkBytes));
  const head: SnapshotHead = {
    lsn,
    id: randomBytes(4).toString('hex'),
    chunks,
    bytes: state.length,
    crc: crc32c(Buffer.from(state.buffer, state.byteOffset, state.length)),
  };
  const out: { key: string; value: Buffer }[] = [];
  for (let i = 0; i < chunks; i++) {
    const view = state.subarray(i * chunkBytes, Math.min(state.length, (i + 1) * chunkBytes));
    out.push({ key: chunkKey(head, i), value: Buffer.from(view.buffer, view.byteOffset, view.length) });
  }
  return { head, chunks: out, headValue: Buffer.from(JSON.stringify({ v: 1, ...head })) };
}

/**
 * Gathers a snapshot partition's messages as they are read, in offset order: the newest head, and the
 * chunks not tombstoned.
 */
export class SnapshotReader {
  private head: SnapshotHead | undefined;
  private readonly chunks = new Map<string, Buffer>();

  constructor(private readonly where: string) {}

  visit(message: StoredMessage): void {
    const key = message.key?.toString() ?? '';
    if (key === HEAD_KEY) {
      if (message.value === null) this.head = undefined;
      else this.head = parseHead(message.value, this.where);
    } else if (key.startsWith('chunk/')) {
      if (message.value === null) this.chunks.delete(key);
      else this.chunks.set(key, message.value);
    }
  }

  /**
   * The snapshot the newest head names, put together and checked, and the keys of chunks no head names (of
   * an earlier snapshot not yet tombstoned, or of a write that never got its head).
   *
   * @throws {@link SluiceError} `STORE_CORRUPT` when a chunk the head names is missing, or the bytes do not
   *   match its length and CRC.
   */
  result(): { snapshot: { lsn: number; state: Buffer } | undefined; head: SnapshotHead | undefined; stale: string[] } {
    const head = this.head;
    if (!head) return { snapshot: undefined, head, stale: [...this.chunks.keys()] };
    const parts: Buffer[] = [];
    for (let i = 0; i < head.chunks; i++) {
      const chunk = this.chunks.get(chunkKey(head, i));
      if (!chunk)
        throw new SluiceError(
          'STORE_CORRUPT',
          `${this.where}: the snapshot of LSN ${head.lsn} lacks chunk ${i} of ${head.chunks}`,
        );
      parts.push(chunk);
      this.chunks.delete(chunkKey(head, i));
    }
    const state = Buffer.concat(parts);
    if (state.length !== head.bytes || crc32c(state) !== head.crc)
      throw new SluiceError(
        'STORE_CORRUPT',
        `${this.where}: the snapshot of LSN ${head.lsn} is damaged (length or CRC)`,
      );
    return { snapshot: { lsn: head.lsn, state }, head, stale: [...this.chunks.keys()] };
  }
}

function parseHead(value: Buffer, where: string): SnapshotHead {
  try {
    const h = JSON.parse(value.toString()) as Partial<SnapshotHead> & { v?: unknown };
    const ints = [h.lsn, h.chunks, h.bytes, h.crc].every((n) => Number.isInteger(n) && (n as number) >= 0);
    if (h.v === 1 && ints && typeof h.id === 'string') return h as SnapshotHead;
  } catch {
    // refused below
  }
  throw new SluiceError(
    'STORE_CORRUPT',
    `${where}: the snapshot head does not read (${value.toString().slice(0, 80)})`,
  );
}
