import { createHash } from 'node:crypto';
import { constants, promises as fs } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { SluiceError } from '../core/errors.js';

/** What {@link osLock} found: the lock, taken, or who holds it. */
export type LockResult =
  { readonly release: () => Promise<void> } | { readonly heldBy: 'this process' | 'another process' };

/** Directories (by device and inode) whose lock this process holds. */
const held = new Set<string>();

/**
 * Takes an exclusive lock on a directory that the operating system drops when this process dies, however it
 * dies: no lock is ever left behind, so none is ever judged stale, and a reused pid cannot matter.
 *
 * - Linux: a listening Unix socket in the abstract namespace, named after the directory's device and inode.
 *   `bind` is atomic (one process gets the name, every other gets EADDRINUSE) and the kernel frees the name
 *   when the socket's last descriptor closes, which a dying process's exit does. Processes in other network
 *   namespaces (containers that do not share the host's network) do not see the name.
 * - Windows: a named pipe of the same name (the first instance is exclusive; freed when the process ends).
 * - macOS and the BSDs: `flock` on `LOCK.os` in the directory, through `O_EXLOCK | O_NONBLOCK`.
 */
export async function osLock(dir: string): Promise<LockResult> {
  const { dev, ino } = await fs.stat(dir, { bigint: true });
  const id = createHash('sha256').update(`${dev}:${ino}`).digest('hex').slice(0, 40);
  if (held.has(id)) return { heldBy: 'this process' };
  held.add(id); // before any await: a second open in this process sees it
  try {
    const release = await take(dir, id);
    if (!release) {
      held.delete(id);
      return { heldBy: 'another process' };
    }
    return {
      release: async () => {
        await release();
        held.delete(id);
      },
    };
  } catch (error) {
    held.delete(id);
    throw error;
  }
}

function take(dir: string, id: string): Promise<(() => Promise<void>) | undefined> {
  if (process.platform === 'linux') return listen(`\0sluice-store-${id}`);
  if (process.platform === 'win32') return listen(`\\\\.\\pipe\\sluice-store-${id}`);
  return flock(path.join(dir, 'LOCK.os'));
}

/** Binds a socket name: resolves with its release, or undefined when another socket has the name. */
function listen(name: string): Promise<(() => Promise<void>) | undefined> {
  return new Promise((resolve, reject) => {
    const server = net.createServer((socket) => socket.destroy());
    server.once('error', (error: NodeJS.ErrnoException) =>
      error.code === 'EADDRINUSE' ? resolve(undefined) : reject(error),
    );
    // `exclusive`: a cluster worker binds the name itself, instead of sharing the primary's handle.
    server.listen({ path: name, exclusive: true }, () => {
      server.unref(); // the lock does not keep the process alive
      resolve(() => new Promise<void>((done) => server.close(() => done())));
    });
  });
}

async function flock(file: string): Promise<(() => Promise<void>) | undefined> {
  const exlock = (constants as Record<string, number | undefined>).O_EXLOCK;
  if (exlock === undefined)
    throw new SluiceError('CONFIG_INVALID', `fileStore: no directory lock on platform ${process.platform}`);
  try {
    const handle = await fs.open(file, constants.O_RDWR | constants.O_CREAT | exlock | constants.O_NONBLOCK);
    return () => handle.close();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EWOULDBLOCK' || code === 'EAGAIN') return undefined;
    throw error;
  }
}
