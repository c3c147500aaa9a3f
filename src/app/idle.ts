import { isRetriable } from '../core/errors.js';
import type { Waiters } from '../core/waiters.js';

/** How long `idle()` waits, without progress, before it asks the brokers again (a remote fetch may be under way). */
const LOOK_AGAIN_MS = 20;

/** What `idle()` watches. */
export interface IdleSource {
  /** Nothing is under way in the app (or the app has stopped). */
  quiet(): boolean;
  /** How many messages each subscription has left to read. */
  lags(): Promise<readonly number[]>;
  /** Woken whenever work was taken or finished, an append became durable, or the app stopped. */
  readonly progress: Waiters;
}

/**
 * Resolves once the app is quiet and nothing is left to read; looks again at each progress. See
 * {@link App.idle}.
 */
export async function waitIdle(app: IdleSource): Promise<void> {
  for (;;) {
    if (!app.quiet()) {
      await app.progress.next();
      continue;
    }
    // Look again after the ready work has run (a settled handler may just have published more), then ask
    // the brokers whether anything is left to read.
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (!app.quiet()) continue;
    // Work taken and finished while the brokers answer makes their answer stale: a handler may have read a
    // message and published another after its topic's end was read. Then the answer does not count.
    const wakes = app.progress.wakes;
    const lags = await app.lags().catch((error: unknown) => {
      // A broker that cannot answer for a moment (its group coordinator loading after a restart) is asked again.
      if (isRetriable(error)) return undefined;
      throw error;
    });
    if (lags === undefined) {
      await progressOrAfter(app.progress, LOOK_AGAIN_MS);
      continue;
    }
    if (app.progress.wakes !== wakes) continue;
    if (app.quiet() && lags.every((l) => l === 0)) return;
    // Something is on its way: wait for progress, or look again shortly (a remote fetch is under way).
    await progressOrAfter(app.progress, LOOK_AGAIN_MS);
  }
}

/** Resolves at the next progress, or after `ms` of Node's own time, whichever comes first. */
function progressOrAfter(progress: Waiters, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    void progress.next().then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
