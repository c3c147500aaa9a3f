import { promises as fs } from 'node:fs';
import { osLock, type LockResult } from './os-lock.js';

export type { LockResult } from './os-lock.js';

/** An open file, as the file store uses one. */
export interface StoreFile {
  write(bytes: Buffer, offset: number, length: number): Promise<{ bytesWritten: number }>;
  writeFile(data: string | Uint8Array): Promise<void>;
  /** fdatasync: the file's data (and its length) are durable. */
  datasync(): Promise<void>;
  /** fsync. */
  sync(): Promise<void>;
  truncate(length: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * The disk under the file store: the operations it makes, nothing more, so that the deterministic
 * simulator (test/sim) can put a disk that tears writes, loses what was not fsynced and fails fsyncs under
 * the very code that runs in production. Errors carry Node's `code` (`ENOENT`, `EEXIST`).
 */
export interface FileSystem {
  mkdir(dir: string): Promise<void>;
  readdir(dir: string): Promise<string[]>;
  readFile(file: string): Promise<Buffer>;
  /** `a` appends (creating), `w` truncates (creating), `wx` creates or fails with EEXIST, `r+` updates. */
  open(file: string, flag: 'a' | 'w' | 'wx' | 'r+'): Promise<StoreFile>;
  rename(from: string, to: string): Promise<void>;
  /** Removes a file; no error if it is not there. */
  rm(file: string): Promise<void>;
  /** Fsyncs a directory, so that a file created, renamed or removed in it survives a crash. */
  syncDirectory(dir: string): Promise<void>;
  /**
   * Takes an exclusive lock on a directory that is dropped when this process dies, however it dies; resolves
   * with its release, or with who holds it. Never a lock that outlives its holder: no stale lock to judge.
   */
  lock(dir: string): Promise<LockResult>;
  /** This process's id, written in the directory's `LOCK` file to name the holder to a refused process. */
  readonly pid: number;
}

/** The real disk. */
export const nodeFileSystem: FileSystem = {
  mkdir: async (dir) => void (await fs.mkdir(dir, { recursive: true })),
  readdir: (dir) => fs.readdir(dir),
  readFile: (file) => fs.readFile(file),
  open: (file, flag) => fs.open(file, flag),
  rename: (from, to) => fs.rename(from, to),
  rm: (file) => fs.rm(file, { force: true }),
  async syncDirectory(dir) {
    const handle = await fs.open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  },
  lock: osLock,
  pid: process.pid,
};
