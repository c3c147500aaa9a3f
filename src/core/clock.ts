import type { Clock, Timer } from './ports.js';

/** Node fires a timeout of more than 2^31 − 1 ms at once; longer delays are chained in steps. */
export const MAX_NODE_TIMEOUT_MS = 2 ** 31 - 1;

/** The system clock: `Date.now()` and Node timers, which do not keep the process alive. */
export class SystemClock implements Clock {
  now(): number {
    return Date.now();
  }

  setTimer(delayMs: number, fire: () => void): Timer {
    let handle: NodeJS.Timeout;
    const due = Date.now() + Math.max(0, delayMs);
    const arm = (): void => {
      const left = due - Date.now();
      // Never synchronously: a timer due now still fires on a later turn, as the caller expects.
      handle = setTimeout(left > MAX_NODE_TIMEOUT_MS ? arm : fire, Math.min(Math.max(0, left), MAX_NODE_TIMEOUT_MS));
      handle.unref();
    };
    arm();
    return { cancel: () => clearTimeout(handle) };
  }
}

/** Resolves after `delayMs` on `clock`, or at once with `false` if `signal` aborts first. */
export function sleep(clock: Clock, delayMs: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  if (delayMs <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      timer.cancel();
      resolve(false);
    };
    const timer = clock.setTimer(delayMs, () => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    });
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
