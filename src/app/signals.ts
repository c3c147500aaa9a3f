import { holdProcess } from '../core/clock.js';
import type { Logger } from '../core/ports.js';

/** SIGINT or SIGTERM, listened for while `run()` serves. */
export interface Signals {
  /** Resolves at the first SIGINT or SIGTERM. */
  readonly received: Promise<'signal'>;
  /** Stops listening. */
  dispose(): void;
}

/** Listens for SIGINT and SIGTERM from now until `dispose()`; logs the one received. */
export function listenForSignals(log: Logger): Signals {
  let onSignal: (signal: NodeJS.Signals) => void = () => {};
  const received = new Promise<'signal'>((resolve) => {
    onSignal = (signal) => {
      log.info('signal received, stopping', { signal });
      resolve('signal');
    };
  });
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    received,
    dispose: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/** What {@link serveUntilStopped} runs: an app's start and stop, and the promise that `stop()` was called. */
export interface Served {
  start(): Promise<void>;
  stop(): Promise<void>;
  readonly stopCalled: Promise<'stop'>;
  readonly log: Logger;
}

/**
 * `app.run()`: starts the app, holding the process, and stops it at the first SIGINT or SIGTERM or `stop()`
 * call — during the start too (the start unwinds) — resolving once it is stopped. From then on a signal is
 * no longer listened for: a second one ends the process as Node does (a stop or a start that hangs, in a
 * hook say, cannot keep it).
 */
export async function serveUntilStopped(app: Served): Promise<void> {
  const signals = listenForSignals(app.log);
  const release = holdProcess();
  try {
    const started = app.start();
    const first = await Promise.race([started.then(() => 'started' as const), signals.received, app.stopCalled]);
    if (first !== 'started') {
      signals.dispose(); // before the stop, which waits for the start to unwind
      await app.stop();
      await started.catch(() => {}); // it unwound (or had just finished, and the stop stopped it)
      return;
    }
    await Promise.race([signals.received, app.stopCalled]);
  } finally {
    signals.dispose();
    release();
  }
  await app.stop();
}
