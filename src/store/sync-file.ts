import type { FileSystem } from './fs.js';

/** Writes a whole file and fsyncs it before closing; `flag` `'wx'` fails with EEXIST if it exists. */
export async function writeFileSynced(fs: FileSystem, file: string, data: string | Uint8Array, flag: 'w' | 'wx' = 'w'): Promise<void> {
  const handle = await fs.open(file, flag);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}
