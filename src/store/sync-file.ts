import path from 'node:path';
import type { FileSystem } from './fs.js';

/** Writes a whole file and fsyncs it before closing; `flag` `'wx'` fails with EEXIST if it exists. */
export async function writeFileSynced(
  fs: FileSystem,
  file: string,
  data: string | Uint8Array,
  flag: 'w' | 'wx' = 'w',
): Promise<void> {
  const handle = await fs.open(file, flag);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Replaces `dir/name` atomically and durably: a temp file is written and fsynced, renamed over the file, and
 * the directory is fsynced. A crash (or a full disk) at any point leaves the old file whole or the new one
 * whole, never a part of either. One writer at a time per file (the temp name is fixed).
 */
export async function writeFileAtomic(
  fs: FileSystem,
  dir: string,
  name: string,
  data: string | Uint8Array,
): Promise<void> {
  const temp = path.join(dir, `${name}.tmp`);
  await writeFileSynced(fs, temp, data);
  await fs.rename(temp, path.join(dir, name));
  await fs.syncDirectory(dir);
}
