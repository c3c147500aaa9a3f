import { promises as fs } from 'node:fs';

/** Writes a whole file and fsyncs it before closing; `flag` `'wx'` fails with EEXIST if it exists. */
export async function writeFileSynced(file: string, data: string | Uint8Array, flag: 'w' | 'wx' = 'w'): Promise<void> {
  const handle = await fs.open(file, flag);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Fsyncs a directory, so that a file created, renamed or removed in it survives a crash. */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
