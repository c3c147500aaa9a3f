import { fork, type ChildProcess } from 'node:child_process';
import { watch, type FSWatcher } from 'node:fs';
import path from 'node:path';

/** How long a burst of file changes (an editor's save) is gathered before the app restarts, in milliseconds. */
const SETTLE_MS = 150;
/** Paths under these folders never restart the app. */
const IGNORED = /(^|[/\\])(node_modules|\.git|\.sluice|dist)([/\\]|$)/;

/**
 * `sluice run --reload`: runs the app in a child process (`sluice run` without `--reload`) and, when a file
 * under `dir` changes, stops it with SIGTERM — a graceful stop: what is in flight finishes and is committed —
 * waits for it to exit, and starts it again. SIGINT or SIGTERM stop the child the same way, then this process
 * exits with the child's code. The child runs in a process group of its own, so a terminal's Ctrl-C reaches it
 * once, from here; if this process dies, the child stops gracefully when its IPC channel closes.
 */
export async function supervise(main: string, args: readonly string[], dir: string): Promise<number> {
  let child: ChildProcess | undefined;
  let stopping = false;
  let restart: NodeJS.Timeout | undefined;
  const exited = (c: ChildProcess): Promise<number> =>
    new Promise((resolve) => {
      if (c.exitCode !== null) return resolve(c.exitCode);
      c.once('exit', (code, signal) => resolve(code ?? (signal === null ? 1 : 128)));
    });
  const start = (): ChildProcess => {
    const c = fork(main, ['run', ...args], { detached: true, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    process.stderr.write(`sluice: started the app (pid ${c.pid})\n`);
    return c;
  };
  child = start();
  const watcher: FSWatcher = watch(dir, { recursive: true }, (_, file) => {
    if (stopping || (file !== null && IGNORED.test(String(file)))) return;
    clearTimeout(restart);
    restart = setTimeout(() => void reload(String(file ?? dir)), SETTLE_MS);
  });
  let reloading: Promise<void> = Promise.resolve();
  const reload = (file: string): Promise<void> =>
    (reloading = reloading.then(async () => {
      if (stopping || child === undefined) return;
      process.stderr.write(`sluice: ${path.relative(dir, path.resolve(dir, file)) || file} changed; restarting\n`);
      const old = child;
      old.kill('SIGTERM');
      await exited(old);
      if (!stopping) child = start();
    }));
  const code = await new Promise<number>((resolve) => {
    const stop = (): void => {
      if (stopping) return;
      stopping = true;
      clearTimeout(restart);
      watcher.close();
      void reloading.then(async () => {
        child?.kill('SIGTERM');
        resolve(child === undefined ? 0 : await exited(child));
      });
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  return code;
}
