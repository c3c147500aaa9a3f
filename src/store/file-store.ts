import path from 'node:path';
import { SluiceError, show } from '../core/errors.js';
import { faultsOf, type ShardLog, type Store, type StoreObserver } from '../core/ports.js';
import { FileShardLog } from './file-shard-log.js';
import { faultyLogSteps } from './store-faults.js';
import { nodeFileSystem, type FileSystem } from './fs.js';
import { lockDirectory } from './lock.js';
import { writeFileAtomic } from './sync-file.js';

const SHARDS = 'SHARDS';

/**
 * Settings of {@link fileStore}.
 *
 * @category Store
 */
export interface FileStoreOptions {
  /** The directory, created if missing; the app's default is `.sluice/<app name>` under the working directory. */
  dir: string;
  /**
   * Shard logs; a key's shard is `shardOf(key, shards)`. Fixed for the life of the directory: opening it
   * with another count throws `CONFIG_INVALID`. @default 4
   */
  shards?: number;
  /** A segment file is rolled past this size, in bytes: an integer >= 1024. @default `67_108_864` (64 MiB) */
  segmentBytes?: number;
  /**
   * Called when a write or fsync fails. The log refuses every later append; the only way on is to crash
   * and recover from what is durable. @default a function that throws `error` on the next tick, ending the process
   */
  onFatal?: (error: unknown) => void;
  /**
   * A shard's state is snapshotted after this many records (and at least twice as many as it has keys),
   * and the segments the snapshot covers are deleted. @default 10_000
   */
  snapshotEvery?: number;
  /** @internal The disk. @default the real one; the deterministic simulator (test/sim) passes a simulated one */
  fs?: FileSystem;
}

/**
 * The embedded default store: per shard, segment files of length-prefixed, CRC32C-checked records with
 * group commit, torn-tail recovery, a manifest against damage at rest (a file deleted, emptied or cut is
 * refused with `STORE_CORRUPT`, never read as a shorter log) and a lock against a second process. Nothing
 * touches the disk before the app opens it, at `start()`. The repository's `docs/store.md` tells the file
 * format and what recovery detects.
 *
 * @throws {@link SluiceError} `CONFIG_INVALID` when `shards` or `snapshotEvery` is not a positive
 *   integer, or `segmentBytes` is not an integer >= 1024.
 *
 * @example
 * ```ts
 * const app = new App({ name: 'shop', store: fileStore({ dir: '/var/lib/shop/pace', shards: 8 }) });
 * ```
 *
 * @category Store
 */
export function fileStore(options: FileStoreOptions): Store {
  return new FileStore(options);
}

class FileStore implements Store {
  readonly shards: number;
  readonly snapshotEvery: number | undefined;
  private readonly fs: FileSystem;
  private readonly logs: FileShardLog[];
  private release: (() => Promise<void>) | undefined;

  constructor(private readonly options: FileStoreOptions) {
    const shards = options.shards ?? 4;
    if (!Number.isInteger(shards) || shards < 1)
      throw new SluiceError('CONFIG_INVALID', `fileStore: shards must be a positive integer, got ${show(shards)}`);
    const segmentBytes = options.segmentBytes ?? 64 * 1024 * 1024;
    if (!Number.isInteger(segmentBytes) || segmentBytes < 1024)
      throw new SluiceError(
        'CONFIG_INVALID',
        `fileStore: segmentBytes must be an integer >= 1024, got ${show(segmentBytes)}`,
      );
    this.shards = shards;
    const every = options.snapshotEvery;
    if (every !== undefined && !(Number.isInteger(every) && every >= 1))
      throw new SluiceError(
        'CONFIG_INVALID',
        `fileStore: snapshotEvery must be a positive integer, got ${show(every)}`,
      );
    this.snapshotEvery = every;
    this.fs = options.fs ?? nodeFileSystem;
    const onFatal =
      options.onFatal ??
      ((error: unknown) =>
        process.nextTick(() => {
          throw error;
        }));
    const steps = faultyLogSteps(faultsOf(options)); // the correct ones unless the simulator injected faults
    this.logs = Array.from(
      { length: shards },
      (_, i) => new FileShardLog(i, path.join(options.dir, `shard-${i}`), segmentBytes, onFatal, this.fs, steps),
    );
  }

  async open(): Promise<void> {
    await this.fs.mkdir(this.options.dir);
    const release = await lockDirectory(this.fs, this.options.dir);
    try {
      if (!(await this.checkShardCount())) {
        // The first open (or one that did not finish): shard directories first, SHARDS last, so that a
        // store with SHARDS has every shard's directory and manifest.
        await allOf(this.logs.map((l) => l.create()));
        await this.fs.syncDirectory(this.options.dir); // the shard directories' names are durable before SHARDS
        await writeFileAtomic(this.fs, this.options.dir, SHARDS, `${this.shards}\n`);
      }
      await allOf(this.logs.map((l) => l.open()));
    } catch (error) {
      await Promise.all(this.logs.map((l) => l.close()));
      await release(); // a store that did not open holds nothing
      throw error;
    }
    this.release = release;
  }

  observe(observer: StoreObserver): void {
    for (const log of this.logs) log.observer = observer;
  }

  log(shard: number): ShardLog {
    const log = this.logs[shard];
    if (!log) throw new RangeError(`fileStore: no shard ${shard} (it has ${this.shards})`);
    return log;
  }

  async close(): Promise<void> {
    await Promise.all(this.logs.map((l) => l.close()));
    await this.release?.();
    this.release = undefined;
  }

  /**
   * True when the directory's SHARDS file says how many shards it was made with (and that is `shards`: a
   * directory made with another count would send keys to the wrong shards); false when it is to be made.
   * SHARDS is written last by a first open, atomically; a missing or unreadable one (an earlier version wrote
   * it in place, and a full disk left it empty) is made again only if no shard holds records.
   */
  private async checkShardCount(): Promise<boolean> {
    const dir = this.options.dir;
    const found = await this.fs.readFile(path.join(dir, SHARDS)).then(
      (b) => b.toString(),
      () => undefined,
    );
    if (found !== undefined && /^\s*[1-9]\d*\s*$/.test(found)) {
      if (Number(found) !== this.shards)
        throw new SluiceError(
          'CONFIG_INVALID',
          `fileStore: ${dir} was made with ${found.trim()} shards, got shards ${this.shards}`,
        );
      return true;
    }
    const holding = await this.shardsHoldingRecords();
    if (holding.length > 0) {
      const state = found === undefined ? 'is missing' : `is damaged (it reads ${JSON.stringify(found.slice(0, 40))})`;
      throw new SluiceError(
        'STORE_CORRUPT',
        `store ${dir}: its ${SHARDS} file ${state}, but ${holding.join(', ')} hold records. Write the number of shards the store was made with (its shard-N directories) into ${path.join(dir, SHARDS)}, or restore the store from a backup`,
      );
    }
    return false;
  }

  /** The shard directories (shard-N, any N) that hold a segment or a snapshot. */
  private async shardsHoldingRecords(): Promise<string[]> {
    const named = (await this.fs.readdir(this.options.dir)).filter((n) => /^shard-\d+$/.test(n));
    const names = [...new Set([...named, ...this.logs.map((_, i) => `shard-${i}`)])].sort();
    const holding: string[] = [];
    for (const name of names) {
      const files = await this.fs.readdir(path.join(this.options.dir, name)).catch(() => [] as string[]);
      if (files.some((f) => f.endsWith('.seg') || f === 'snapshot')) holding.push(name);
    }
    return holding;
  }
}

/**
 * Waits for every one of `work`, then throws the first failure: unlike `Promise.all`, no log is still
 * opening (and about to take a file handle) when the caller closes them all after a failure.
 */
async function allOf(work: Promise<unknown>[]): Promise<void> {
  const failed = (await Promise.allSettled(work)).find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
}
