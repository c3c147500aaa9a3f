/**
 * A simulated disk under the file store. Each file has the bytes written to it and the bytes that are
 * durable (as of its last fsync); each directory has the names it holds and the names that are durable (as
 * of its last directory fsync). A crash keeps only what is durable — of what was written since, a seeded
 * prefix survives, so the last write may tear at any byte — and drops names whose directory was not
 * fsynced. Reads, writes and syncs complete only when the world lets them (`complete`), so a crash can
 * fall between a write and its fsync, and a read takes turns of the event loop as a real one does (a
 * recovery that read in microtasks would hide a race with what runs beside it). Faults: an fsync that
 * fails, and a bit flipped in a file at rest.
 */
import path from 'node:path';
import type { FileSystem, StoreFile } from '../../src/store/fs.js';
import type { Random } from './random.js';

class Inode {
  data: Buffer = Buffer.alloc(0);
  durable: Buffer = Buffer.alloc(0);
}

interface Op {
  readonly run: () => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

const error = (code: string, what: string): NodeJS.ErrnoException =>
  Object.assign(new Error(`${code}: ${what}`), { code });

export class SimDisk {
  /** Names as the running process sees them, and as a crash would leave them. */
  private names = new Map<string, Inode>();
  private durableNames = new Map<string, Inode>();
  private dirs = new Set<string>(['/']);
  private queue: Op[] = [];
  private life = 0;
  /** Directory locks and the life that took each: a lock of an earlier life died with it. */
  private locks = new Map<string, number>();
  /** The chance that an fsync fails (the log must treat it as fatal). */
  fsyncFailure = 0;

  constructor(private readonly random: Random) {}

  /** Operations waiting to complete. */
  get waiting(): number {
    return this.queue.length;
  }

  /** Completes up to `n` waiting operations, oldest first. */
  complete(n: number): number {
    const ops = this.queue.splice(0, n);
    for (const op of ops) {
      try {
        op.resolve(op.run());
      } catch (e) {
        op.reject(e);
      }
    }
    return ops.length;
  }

  /**
   * The process dies: waiting operations never complete, and the disk keeps what was durable plus, for
   * each file, a seeded prefix of what was written after its last fsync.
   */
  crash(): void {
    this.life++;
    this.queue = [];
    const kept = new Map<string, Inode>();
    const seen = new Map<Inode, Inode>();
    for (const [name, inode] of this.durableNames) {
      let after = seen.get(inode);
      if (!after) {
        after = new Inode();
        const extra =
          inode.data.length > inode.durable.length && inode.data.subarray(0, inode.durable.length).equals(inode.durable)
            ? inode.data.subarray(inode.durable.length)
            : Buffer.alloc(0);
        const keep = extra.length === 0 ? 0 : this.random.pick([0, extra.length, this.random.int(extra.length + 1)]);
        after.data = Buffer.concat([inode.durable, extra.subarray(0, keep)]);
        after.durable = after.data;
        seen.set(inode, after);
      }
      kept.set(name, after);
    }
    this.names = kept;
    this.durableNames = new Map(kept);
  }

  /**
   * Flips one bit of a segment file at rest: one that is followed, in its shard's directory, by a segment
   * holding records (so good records follow the damage and recovery must call it corruption, not a torn
   * tail). False when there is no such file.
   */
  flipBit(): string | false {
    const segments = [...this.names.keys()].filter((n) => n.endsWith('.seg')).sort();
    const files = segments.filter((name, i) => {
      const next = segments[i + 1];
      return (
        this.names.get(name)!.data.length > 0 &&
        next !== undefined &&
        path.dirname(next) === path.dirname(name) &&
        this.names.get(next)!.data.length > 0
      );
    });
    if (files.length === 0) return false;
    const name = this.random.pick(files);
    const inode = this.names.get(name)!;
    const at = this.random.int(inode.data.length);
    const data = Buffer.from(inode.data);
    data[at]! ^= 1 << this.random.int(8);
    inode.data = data;
    inode.durable = data;
    return `${name} byte ${at}`;
  }

  /** The disk as one process life sees it: after a crash, the old life's operations go nowhere. */
  mount(pid: number): FileSystem {
    const life = this.life;
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- named for what it is, in the many closures below
    const disk = this;
    const later = <T = void>(run: () => T): Promise<T> =>
      new Promise<T>((resolve, reject) => {
        if (disk.life !== life) return; // the process is dead: nothing completes
        disk.queue.push({
          run: () => (disk.life === life ? run() : undefined),
          resolve: resolve as (value: unknown) => void,
          reject,
        });
      });
    const now = <T>(get: () => T): Promise<T> =>
      disk.life !== life ? new Promise(() => {}) : Promise.resolve().then(get);
    const inode = (file: string): Inode => {
      const found = disk.names.get(file);
      if (!found) throw error('ENOENT', file);
      return found;
    };
    const handle = (file: string, node: Inode): StoreFile => ({
      write: (bytes, offset, length) =>
        later(() => void (node.data = Buffer.concat([node.data, bytes.subarray(offset, offset + length)]))).then(
          () => ({ bytesWritten: length }),
        ),
      writeFile: (data) => later(() => void (node.data = Buffer.from(data))),
      datasync: () => later(() => disk.sync(node, file)),
      sync: () => later(() => disk.sync(node, file)),
      truncate: (length) => later(() => void (node.data = node.data.subarray(0, length))),
      close: () => now(() => undefined),
    });
    return {
      pid,
      lock: (dir) =>
        now(() => {
          const holder = disk.locks.get(dir);
          if (holder === life) return { heldBy: 'this process' as const };
          disk.locks.set(dir, life); // any other holder was an earlier life, dead
          return { release: () => now(() => void (disk.locks.get(dir) === life && disk.locks.delete(dir))) };
        }),
      mkdir: (dir) => now(() => void disk.dirs.add(dir)),
      readdir: (dir) =>
        later(() => {
          if (!disk.dirs.has(dir)) throw error('ENOENT', dir);
          return [...disk.names.keys()]
            .filter((n) => path.dirname(n) === dir)
            .map((n) => path.basename(n))
            .sort();
        }),
      readFile: (file) => later(() => Buffer.from(inode(file).data)),
      open: (file, flag) =>
        now(() => {
          let node = disk.names.get(file);
          if (node && flag === 'wx') throw error('EEXIST', file);
          if (!node && flag === 'r+') throw error('ENOENT', file);
          if (!node) disk.names.set(file, (node = new Inode()));
          if (flag === 'w') node.data = Buffer.alloc(0);
          return handle(file, node);
        }),
      rename: (from, to) =>
        later(() => {
          disk.names.set(to, inode(from));
          disk.names.delete(from);
        }),
      rm: (file) => later(() => void disk.names.delete(file)),
      syncDirectory: (dir) =>
        later(() => {
          for (const name of [...disk.durableNames.keys()])
            if (path.dirname(name) === dir) disk.durableNames.delete(name);
          for (const [name, node] of disk.names) if (path.dirname(name) === dir) disk.durableNames.set(name, node);
        }),
    };
  }

  private sync(node: Inode, file: string): void {
    if (this.fsyncFailure > 0 && this.random.chance(this.fsyncFailure)) throw error('EIO', `fsync ${file}`);
    node.durable = node.data;
  }
}
