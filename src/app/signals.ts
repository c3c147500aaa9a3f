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
