import path from 'node:path';
import { SluiceError } from '../core/errors.js';
import type { ShardLog, StoreObserver } from '../core/ports.js';
import { checkRecord } from '../core/records.js';
import { encodeFrame, readFrame, type FrameReader } from './frame.js';
import type { FileSystem, StoreFile } from './fs.js';
import { MANIFEST, emptyManifest, readManifest, storeDamaged, writeManifest } from './manifest.js';
import {
  SEGMENT_HEADER_BYTES,
  cutTornTail,
  listSegments,
  scanSegments,
  segmentHeader,
  segmentName,
  type Segment,
} from './segments.js';
import { readSnapshotFile, writeSnapshotFile } from './snapshot-file.js';

interface Pending {
  readonly lsn: number;
  readonly frame: Buffer;
  readonly resolve: (lsn: number) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Two steps of a {@link FileShardLog} that the simulator's broken engines replace (see `Faults`,
 * store-faults.ts); {@link fileLogSteps} are the correct ones.
 */
export interface FileLogSteps {
  /** Reads a frame in recovery and replay: checking its length, its LSN and its CRC. */
  readonly readFrame: FrameReader;
  /**
   * Fsyncs a new segment's directory (`fs.syncDirectory(dir)`), so that its name survives a crash, before the
   * log names it in the manifest and puts a record in. Nothing returned instead of a promise: the segment is
   * used neither synced nor named (the simulator's `skipDirSync`; the manifest's write would sync it too).
   */
  readonly syncNewSegment: (fs: FileSystem, dir: string) => Promise<void> | undefined;
}

/** The correct steps: {@link readFrame}, and a new segment's directory fsynced before it is used. */
export const fileLogSteps: FileLogSteps = { readFrame, syncNewSegment: (fs, dir) => fs.syncDirectory(dir) };

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
  private failed: SluiceError | undefined;
  private opened = false;
  private newestSegment = 0;
  private snapshotLsn = 0;
  private snapshotAtOpen: { lsn: number; state: Uint8Array } | undefined;
  private serial: Promise<void> = Promise.resolve();
  /** Told of each group commit and snapshot (metrics), when the store is observed. */
  observer: StoreObserver | undefined = undefined;

  constructor(
    readonly shard: number,
    private readonly dir: string,
    private readonly segmentBytes: number,
    private readonly onFatal: (error: unknown) => void,
    private readonly fs: FileSystem,
    private readonly steps: FileLogSteps = fileLogSteps,
  ) {}

  /** Makes the shard's directory and an empty manifest: done by a store's first open, before its SHARDS file. */
  async create(): Promise<void> {
    await this.fs.mkdir(this.dir);
    await writeManifest(this.fs, this.dir, emptyManifest);
  }

  /**
   * Opens the shard: checks what is on disk against its manifest (refusing, with `STORE_CORRUPT` and
   * nothing changed, a snapshot or segment that is missing, or records that were durable and are gone),
   * cuts a torn tail, and writes a fresh manifest once what it recovered is durable.
   */
  async open(): Promise<void> {
    const fs = this.fs;
    const segments = await listSegments(fs, this.dir).catch((error: NodeJS.ErrnoException) => {
      throw error.code === 'ENOENT' ? storeDamaged(this.dir, 'the shard directory is missing') : error;
    });
    const manifest = await readManifest(fs, this.dir);
    if (!manifest) {
      const first = segments[0];
      if (first && readFrame(await fs.readFile(first.file), 0, first.firstLsn).ok) {
        // A record where the header should be: a store made before segments had headers and shards manifests.
        throw new SluiceError(
          'STORE_CORRUPT',
          `store ${path.dirname(this.dir)} was made by an earlier version of Sluice, whose files this version does not read (${path.basename(this.dir)} has no ${MANIFEST}, and its segments no header): let that version drain it, or move it aside to start an empty store`,
        );
      }
      throw storeDamaged(this.dir, `its ${MANIFEST} is missing`);
    }
    const snapshot = await readSnapshotFile(fs, this.dir);
    const snapshotLsn = snapshot?.lsn ?? 0;
    if (snapshotLsn < manifest.snapshot) {
      throw storeDamaged(
        this.dir,
        snapshot
          ? `its snapshot is of LSN ${snapshotLsn}, older than the one of LSN ${manifest.snapshot} it wrote last`
          : `its snapshot (of the records up to LSN ${manifest.snapshot}) is missing`,
      );
    }
    if (manifest.segment > 0 && !segments.some((s) => s.firstLsn === manifest.segment)) {
      throw storeDamaged(
        this.dir,
        `its newest segment, ${segmentName(manifest.segment)}, is missing (records from LSN ${manifest.segment} on are lost)`,
      );
    }
    const oldest = segments[0];
    if (oldest && oldest.firstLsn > snapshotLsn + 1) {
      const before = snapshotLsn > 0 ? `the snapshot ends at LSN ${snapshotLsn}` : 'there is no snapshot';
      throw storeDamaged(
        this.dir,
        `records ${snapshotLsn + 1} to ${oldest.firstLsn - 1} are missing: ${before}, and the oldest segment, ${path.basename(oldest.file)}, starts at LSN ${oldest.firstLsn}`,
      );
    }
    const scan = await scanSegments(fs, this.dir, segments, { namedSegment: manifest.segment }, this.steps.readFrame);
    const durable = Math.max(manifest.durable, snapshotLsn);
    if (scan.nextLsn - 1 < durable) {
      const newest = segments.at(-1);
      throw storeDamaged(
        this.dir,
        newest
          ? `records ${scan.nextLsn} to ${durable} are missing: they were durable, but the newest segment, ${path.basename(newest.file)}, ends at LSN ${scan.nextLsn - 1} (it was cut, emptied or zeroed)`
          : `every segment is missing (records ${snapshotLsn + 1} to ${durable} at least, and any after them)`,
      );
    }
    // The checks passed: repair what a crash leaves.
    if (scan.cut) await cutTornTail(fs, this.dir, scan.cut);
    this.nextLsn = scan.nextLsn;
    this.durable = scan.nextLsn - 1;
    this.snapshotLsn = snapshotLsn;
    this.snapshotAtOpen = snapshot;
    const last = (await listSegments(fs, this.dir)).at(-1); // the cut may have removed segments
    if (last && last.firstLsn <= scan.nextLsn) {
      this.handle = await fs.open(last.file, 'a');
      this.tailBytes = scan.tailBytes;
      await this.handle.datasync(); // what was recovered is durable before the manifest says so
    }
    this.newestSegment = last?.firstLsn ?? 0;
    await this.saveManifest();
    this.opened = true;
  }

  durableLsn(): number {
    return this.durable;
  }

  assignedLsn(): number {
    return this.nextLsn - 1;
  }

  append(record: Uint8Array): Promise<number> {
    if (this.failed !== undefined) throw this.failed;
    checkRecord(record); // before an LSN is given: a refused record must not leave a gap
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
      for (let pos = SEGMENT_HEADER_BYTES; pos < buf.length && expected <= this.durable; expected++) {
        const frame = this.steps.readFrame(buf, pos, expected, expected);
        if (!frame.ok)
          throw new SluiceError('STORE_CORRUPT', `store ${this.dir}: bad record at LSN ${expected} during replay`);
        if (frame.lsn >= fromLsn) visit(frame.lsn, frame.payload);
        pos = frame.next;
      }
    }
  }

  /**
   * Writes the snapshot (atomically) and the manifest that names it, then deletes the segments it makes
   * dead: those whose records all lie at or below `lsn`. The segment being written is always kept.
   */
  async writeSnapshot(lsn: number, state: Uint8Array): Promise<void> {
    if (!(lsn <= this.durable))
      throw new RangeError(`ShardLog.writeSnapshot: LSN ${lsn} is not durable yet (durable: ${this.durable})`);
    const fs = this.fs;
    const startedAt = this.observer === undefined ? 0 : performance.now();
    await writeSnapshotFile(fs, this.dir, lsn, state);
    this.snapshotAtOpen = undefined;
    await this.exclusive(async () => {
      this.snapshotLsn = Math.max(this.snapshotLsn, lsn);
      await this.saveManifest(); // before the segments go: a snapshot deleted later is then seen as missing
      const segments = await listSegments(fs, this.dir);
      await this.removeDead(segments.filter((s, i) => i < segments.length - 1 && segments[i + 1]!.firstLsn <= lsn + 1));
    });
    this.observer?.snapshotWritten(this.shard, (performance.now() - startedAt) / 1000);
  }

  async readSnapshot(): Promise<{ lsn: number; state: Uint8Array } | undefined> {
    const read = this.snapshotAtOpen ?? (await readSnapshotFile(this.fs, this.dir));
    this.snapshotAtOpen = undefined; // read once at open; not kept
    return read;
  }

  /** Waits for pending appends, then writes the manifest (the last records are durable) and closes the file. */
  async close(): Promise<void> {
    while (this.flushing) await new Promise<void>((resolve) => setImmediate(resolve));
    if (this.opened && this.failed === undefined) await this.exclusive(() => this.saveManifest());
    this.opened = false;
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
          if (
            !this.handle ||
            (this.tailBytes > SEGMENT_HEADER_BYTES && this.tailBytes + bytes.length > this.segmentBytes)
          )
            await this.roll(batch[0]!.lsn);
          const startedAt = this.observer === undefined ? 0 : performance.now();
          await writeAll(this.handle!, bytes);
          await this.handle!.datasync();
          this.observer?.flushed(this.shard, batch.length, (performance.now() - startedAt) / 1000);
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

  /**
   * A new segment: created with its header, its name made durable, then named in the manifest before a record goes in.
   */
  private roll(firstLsn: number): Promise<void> {
    return this.exclusive(async () => {
      await this.handle?.close();
      this.handle = await this.fs.open(path.join(this.dir, segmentName(firstLsn)), 'a');
      await writeAll(this.handle, segmentHeader(firstLsn));
      await this.handle.datasync();
      this.tailBytes = SEGMENT_HEADER_BYTES;
      const synced = this.steps.syncNewSegment(this.fs, this.dir);
      if (synced === undefined) return; // unsynced, so unnamed too
      await synced;
      this.newestSegment = firstLsn;
      await this.saveManifest();
    });
  }

  /**
   * Removes segments whose records all lie within the snapshot, oldest first, each removal made durable
   * before the next: a crash leaves the newer ones, never a hole that would read as a missing segment.
   */
  private async removeDead(dead: readonly Segment[]): Promise<void> {
    for (const s of dead) {
      await this.fs.rm(s.file);
      await this.fs.syncDirectory(this.dir);
    }
  }

  /** Writes the manifest from what is durable now. Call inside {@link exclusive}, or before the log is in use. */
  private saveManifest(): Promise<void> {
    return writeManifest(this.fs, this.dir, {
      segment: this.newestSegment,
      durable: this.durable,
      snapshot: this.snapshotLsn,
    });
  }

  /** Runs `run` after every earlier one has finished: rolls, snapshots and close change the manifest one at a time. */
  private exclusive(run: () => Promise<void>): Promise<void> {
    const next = this.serial.then(run);
    this.serial = next.catch(() => undefined);
    return next;
  }

  private fail(error: unknown, batch: Pending[]): void {
    const fatal = new SluiceError(
      'STORE_CORRUPT',
      `store ${this.dir}: a write or fsync failed; the log refuses further appends (restart to recover)`,
      { cause: error },
    );
    this.failed = fatal;
    for (const p of [...batch, ...this.pending.splice(0)]) p.reject(fatal);
    this.onFatal(fatal);
  }
}

async function writeAll(handle: StoreFile, bytes: Buffer): Promise<void> {
  for (let done = 0; done < bytes.length;) done += (await handle.write(bytes, done, bytes.length - done)).bytesWritten;
}
