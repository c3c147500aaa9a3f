import path from 'node:path';
import { SluiceError } from '../core/errors.js';
import type { FileSystem } from './fs.js';
import { writeFileAtomic } from './sync-file.js';

/**
 * Takes the directory's lock, so that two processes never share one store: an operating-system lock that
 * the OS drops when its holder dies, however it dies (see `FileSystem.lock`), so a dead holder's lock is
 * never in the way and needs no judging. The holder writes its pid in `LOCK`, which only names it to a
 * refused process: the file has no part in the locking. Returns the release function.
 */
export async function lockDirectory(fs: FileSystem, dir: string): Promise<() => Promise<void>> {
  const taken = await fs.lock(dir);
  const file = path.join(dir, 'LOCK');
  if ('heldBy' in taken) {
    if (taken.heldBy === 'this process')
      throw new SluiceError('CONFIG_INVALID', `store ${dir} is already open in this process`);
    const text = await fs.readFile(file).then(
      (b) => b.toString().trim(),
      () => '',
    );
    const holder = /^\d+$/.test(text) ? `process ${text}` : 'another process';
    throw new SluiceError(
      'CONFIG_INVALID',
      `store ${dir} is in use by ${holder}; two processes must never open one store`,
    );
  }
  try {
    await writeFileAtomic(fs, dir, 'LOCK', `${fs.pid}\n`);
  } catch (error) {
    await taken.release();
    throw error;
  }
  return async () => {
    await fs.rm(file);
    await taken.release();
  };
}
