import { promises as fs } from 'node:fs';
import path from 'node:path';
import { SluiceError } from '../core/errors.js';
import { writeFileSynced } from './sync-file.js';

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * Takes the directory's lock file (`LOCK`, holding the owner's pid), so that two processes never share one
 * log. A lock left by a process that died (a crash, SIGKILL) is taken over. Returns the release function.
 */
export async function lockDirectory(dir: string): Promise<() => Promise<void>> {
  const file = path.join(dir, 'LOCK');
  for (let tries = 0; tries < 3; tries++) {
    try {
      await writeFileSynced(file, String(process.pid), 'wx');
      return async () => void (await fs.rm(file, { force: true }));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = Number((await fs.readFile(file, 'utf8').catch(() => '')).trim());
      if (owner > 0 && owner !== process.pid && alive(owner)) {
        throw new SluiceError('CONFIG_INVALID', `store ${dir} is in use by process ${owner}; two processes must never open one store`);
      }
      if (owner === process.pid) throw new SluiceError('CONFIG_INVALID', `store ${dir} is already open in this process`);
      await fs.rm(file, { force: true }); // its owner is gone
    }
  }
  throw new SluiceError('CONFIG_INVALID', `store ${dir}: could not take the lock`);
}
