import path from 'node:path';
import { SluiceError } from '../core/errors.js';
import { sabotage } from '../core/sabotage.js';
import type { ShardLog } from '../core/ports.js';
import { MAX_RECORD_BYTES, encodeFrame, readFrame } from './frame.js';
import type { FileSystem, StoreFile } from './fs.js';
import { listSegments, recover, segmentName } from './segments.js';
import { readSnapshotFile, writeSnapshotFile } from './snapshot-file.js';

interface Pending {
  readonly lsn: number;
  readonly frame: Buffer;
  readonly resolve: (lsn: number) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * One shard's log in a directory of segment files. One writer with group commit: appends made while a
 * write + fdatasync is under way wait and share the next one. A segment is rolled past `segmentBytes`
 * (the directory is fsynced when one is created). A failed write or fsync is fatal: every pending and later
 * append is refused, and `onFatal` is told; the fsync is never retried.
 */
export class FileShardLog implements ShardLog {
  private handle: StoreFile | undefined;
  private tailBytes = 0;
  private nextLsn = 1;
  private durable = 0;
  private pending: Pending[] = [];
  private flushing = false;
  private failed: unknown;

  constructor(
    readonly shard: number,
    private readonly dir: string,
    private readonly segmentBytes: number,
    private readonly onFatal: (error: unknown) => void,
    private readonly fs: FileSystem,
  ) {}

  async open(): Promise<void> {
    const fs = this.fs;
    await fs.mkdir(this.dir);
    const { nextLsn, tailBytes } = await recover(fs, this.dir, await listSegments(fs, this.dir));
    this.nextLsn = nextLsn;
    this.durable = nextLsn - 1;
    const last = (await listSegments(fs, this.dir)).at(-1); // recovery may have removed segments
    if (last && last.firstLsn <= nextLsn) {
      this.handle = await fs.open(last.file, 'a');
      this.tailBytes = tailBytes;
    }
  }

  durableLsn(): number {
    return this.durable;
  }

  assignedLsn(): number {
    return this.nextLsn - 1;
  }

  append(record: Uint8Array): Promise<number> {
    if (this.failed !== undefined) throw this.failed;
    // Checked before an LSN is given: a refused record must not leave a gap.
    if (!(record instanceof Uint8Array)) throw new TypeError(`ShardLog.append: a record is a Uint8Array, got ${typeof record}`);
    if (record.length > MAX_RECORD_BYTES) throw new RangeError(`ShardLog.append: a record may take at most ${MAX_RECORD_BYTES} bytes, got ${record.length}`);
    const lsn = this.nextLsn++;
    const frame = encodeFrame(lsn, record);
    return new Promise((resolve, reject) => {
      this.pending.push({ lsn, frame, resolve, reject });
      if (!this.flushing) {
        // Start the write a turn later: appenders that just heard back join this group instead of
        // waiting behind a write of one.
        this.flushing = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  async replay(fromLsn: number, visit: (lsn: number, record: Uint8Array) => void): Promise<void> {
    const segments = await listSegments(this.fs, this.dir);
    for (let i = 0; i < segments.length; i++) {
      const next = segments[i + 1];
      if (next && next.firstLsn <= fromLsn) continue;
      const buf = await this.fs.readFile(segments[i]!.file);
      let expected = segments[i]!.firstLsn;
      for (let pos = 0; pos < buf.length && expected <= this.durable; expected++) {
        const frame = readFrame(buf, pos, expected);
        if (!frame.ok) throw new SluiceError('STORE_CORRUPT', `store ${this.dir}: bad record at LSN ${expected} during replay`);
        if (frame.lsn >= fromLsn) visit(frame.lsn, frame.payload);
        pos = frame.next;
      }
    }
  }

  /**
   * Writes the snapshot (atomically), then deletes the segments it makes dead: those whose records all lie
   * at or below `lsn`. The segment being written is always kept.
   */
  async writeSnapshot(lsn: number, state: Uint8Array): Promise<void> {
    if (!(lsn <= this.durable)) throw new RangeError(`ShardLog.writeSnapshot: LSN ${lsn} is not durable yet (durable: ${this.durable})`);
    const fs = this.fs;
    await writeSnapshotFile(fs, this.dir, lsn, state);
    const segments = await listSegments(fs, this.dir);
    const dead = segments.filter((s, i) => i < segments.length - 1 && segments[i + 1]!.firstLsn <= lsn + 1);
    for (const s of dead) await fs.rm(s.file);
    if (dead.length > 0) await fs.syncDirectory(this.dir);
  }

  readSnapshot(): Promise<{ lsn: number; state: Uint8Array } | undefined> {
    return readSnapshotFile(this.fs, this.dir);
  }

  /** Waits for pending appends, then closes the file. */
  async close(): Promise<void> {
    while (this.flushing) await new Promise<void>((resolve) => setImmediate(resolve));
    await this.handle?.close();
    this.handle = undefined;
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.pending.length > 0 && this.failed === undefined) {
        const batch = this.pending;
        this.pending = [];
        const bytes = batch.length === 1 ? batch[0]!.frame : Buffer.concat(batch.map((p) => p.frame));
        try {
          if (!this.handle || (this.tailBytes > 0 && this.tailBytes + bytes.length > this.segmentBytes)) await this.roll(batch[0]!.lsn);
          await writeAll(this.handle!, bytes);
          await this.handle!.datasync();
        } catch (error) {
          this.fail(error, batch);
          return;
        }
        this.tailBytes += bytes.length;
        this.durable = batch[batch.length - 1]!.lsn;
        for (const p of batch) p.resolve(p.lsn);
      }
    } finally {
      this.flushing = false;
    }
  }

  private async roll(firstLsn: number): Promise<void> {
    await this.handle?.close();
    this.handle = await this.fs.open(path.join(this.dir, segmentName(firstLsn)), 'a');
    this.tailBytes = 0;
    if (!sabotage.skipDirSync) await this.fs.syncDirectory(this.dir);
  }

  private fail(error: unknown, batch: Pending[]): void {
    const fatal = new SluiceError('STORE_CORRUPT', `store ${this.dir}: a write or fsync failed; the log refuses further appends (restart to recover)`, { cause: error });
    this.failed = fatal;
    for (const p of [...batch, ...this.pending.splice(0)]) p.reject(fatal);
    this.onFatal(fatal);
  }
}

async function writeAll(handle: StoreFile, bytes: Buffer): Promise<void> {
  for (let done = 0; done < bytes.length; ) done += (await handle.write(bytes, done, bytes.length - done)).bytesWritten;
}
