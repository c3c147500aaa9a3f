import type { Clock, Timer, TimerOptions } from './ports.js';

/** Node fires a timeout of more than 2^31 − 1 ms at once; longer delays are chained in steps. */
export const MAX_NODE_TIMEOUT_MS = 2 ** 31 - 1;

/**
 * The system clock: `Date.now()` and Node timers. A timer holds the process open only when set with
 * `keepAlive` (something awaited waits for it); the others are unref'd, so an idle app never keeps Node
 * running by itself.
 *
 * @category Time and logs
 */
export class SystemClock implements Clock {
  /** `Date.now()`: milliseconds since the epoch. */
  now(): number {
    return Date.now();
  }

  /**
   * Calls `fire` once, `delayMs` milliseconds from now (never synchronously; a delay past Node's 2^31 − 1
   * ms limit is chained in steps). It holds the process open only with `{ keepAlive: true }`.
   */
  setTimer(delayMs: number, fire: () => void, options?: TimerOptions): Timer {
    let handle: NodeJS.Timeout;
    const due = Date.now() + Math.max(0, delayMs);
    const keepAlive = options?.keepAlive === true;
    const arm = (): void => {
      const left = due - Date.now();
      // Never synchronously: a timer due now still fires on a later turn, as the caller expects.
      handle = setTimeout(left > MAX_NODE_TIMEOUT_MS ? arm : fire, Math.min(Math.max(0, left), MAX_NODE_TIMEOUT_MS));
      if (!keepAlive) handle.unref();
    };
    arm();
    return { cancel: () => clearTimeout(handle) };
  }
}

/** Resolves after `delayMs` on `clock`, or at once with `false` if `signal` aborts first. */
export function sleep(clock: Clock, delayMs: number, signal?: AbortSignal, options?: TimerOptions): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  if (delayMs <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      timer.cancel();
      resolve(false);
    };
    const timer = clock.setTimer(
      delayMs,
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve(true);
      },
      options,
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

let holds = 0;
let holder: NodeJS.Timeout | undefined;

/**
 * Keeps the process alive until the returned release is called, whatever its timers are: for the length
 * of a call the user awaits. Holds are counted; one interval serves them all. Releasing twice is harmless.
 */
export function holdProcess(): () => void {
  if (holds++ === 0) holder = setInterval(() => {}, MAX_NODE_TIMEOUT_MS);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--holds === 0) {
      clearInterval(holder);
      holder = undefined;
    }
  };
}
