import path from 'node:path';
import { SluiceError } from '../core/errors.js';
import type { FileSystem } from './fs.js';
import { writeFileSynced } from './sync-file.js';

/**
 * Takes the directory's lock file (`LOCK`, holding the owner's pid), so that two processes never share one
 * log. A lock left by a process that died (a crash, SIGKILL) is taken over. Returns the release function.
 */
export async function lockDirectory(fs: FileSystem, dir: string): Promise<() => Promise<void>> {
  const file = path.join(dir, 'LOCK');
  for (let tries = 0; tries < 3; tries++) {
    try {
      await writeFileSynced(fs, file, String(fs.pid), 'wx');
      return () => fs.rm(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = Number((await fs.readFile(file).catch(() => '')).toString().trim());
      if (owner > 0 && owner !== fs.pid && fs.processAlive(owner)) {
        throw new SluiceError('CONFIG_INVALID', `store ${dir} is in use by process ${owner}; two processes must never open one store`);
      }
      if (owner === fs.pid) throw new SluiceError('CONFIG_INVALID', `store ${dir} is already open in this process`);
      await fs.rm(file); // its owner is gone
    }
  }
  throw new SluiceError('CONFIG_INVALID', `store ${dir}: could not take the lock`);
}
