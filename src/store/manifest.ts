import path from 'node:path';
import { SluiceError } from '../core/errors.js';
import type { FileSystem } from './fs.js';
import { writeFileAtomic } from './sync-file.js';

/**
 * What a shard directory's `MANIFEST` says must be on disk, so that damage at rest — a file deleted, emptied
 * or cut — is refused instead of read as a shorter log. Replaced atomically (`writeFileAtomic`) when the
 * shard is created and opened, when a segment is created, after a snapshot and at a clean close; each
 * field only grows, and is written only once what it names is durable.
 */
export interface Manifest {
  /** The first LSN of the newest segment (0: none yet). It exists, and it is the newest. */
  readonly segment: number;
  /** Every record up to this LSN was durable (fdatasynced) when the manifest was written. */
  readonly durable: number;
  /** The LSN of the latest snapshot (0: none). */
  readonly snapshot: number;
}

export const MANIFEST = 'MANIFEST';
const FORMAT = 1;

export const emptyManifest: Manifest = { segment: 0, durable: 0, snapshot: 0 };

export function writeManifest(fs: FileSystem, dir: string, manifest: Manifest): Promise<void> {
  return writeFileAtomic(fs, dir, MANIFEST, `${JSON.stringify({ format: FORMAT, ...manifest })}\n`);
}

/** The manifest, or undefined when there is none (ENOENT); a damaged one is `STORE_CORRUPT`. */
export async function readManifest(fs: FileSystem, dir: string): Promise<Manifest | undefined> {
  const buf = await fs.readFile(path.join(dir, MANIFEST)).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (!buf) return undefined;
  let parsed: Record<string, unknown> | undefined;
  try {
    parsed = JSON.parse(buf.toString()) as Record<string, unknown>;
  } catch {
    parsed = undefined;
  }
  const count = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
  if (
    !parsed ||
    parsed.format !== FORMAT ||
    !count(parsed.segment) ||
    !count(parsed.durable) ||
    !count(parsed.snapshot)
  ) {
    throw storeDamaged(dir, `its ${MANIFEST} is damaged (it reads ${JSON.stringify(buf.subarray(0, 80).toString())})`);
  }
  return { segment: parsed.segment, durable: parsed.durable, snapshot: parsed.snapshot };
}

/**
 * `STORE_CORRUPT` for damage found in a shard directory (`dir`): names it, says what is wrong and what to do.
 * Nothing has been changed on disk when it is thrown.
 */
export function storeDamaged(dir: string, what: string): SluiceError {
  const store = path.dirname(dir);
  return new SluiceError(
    'STORE_CORRUPT',
    `store ${store}: ${path.basename(dir)}: ${what}. The store was damaged at rest (files deleted, emptied or cut) and is refused rather than read as a shorter log; ` +
      `restore the store from a backup, or move ${store} aside to start an empty store (what it held is then lost)`,
  );
}
