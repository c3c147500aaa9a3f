import { holdProcess } from '../core/clock.js';
import { SluiceError } from '../core/errors.js';
import type { Logger } from '../core/ports.js';
import type { Hooks } from './hooks.js';
import type { Mount } from './mounts.js';
import type { StartParts } from './start-parts.js';

/** Where an app is in its life: see the table on {@link App}. */
export type State = 'new' | 'starting' | 'running' | 'stopping' | 'stopped';

/** What a lifecycle opens and closes, and where it reports. */
export interface LifecycleHost {
  readonly name: string;
  readonly log: Logger;
  readonly version: string;
  /** The mounts to open, read at each start. */
  mounts(): readonly Mount[];
  /** Makes the parts of one start (it may throw: the start then fails with nothing to close). */
  makeStartParts(): StartParts;
  /** Called when the app stopped: whoever waits for progress looks again. */
  onProgress(): void;
  /** The lifecycle hooks, run at their moments (see `HookPhase`). */
  readonly hooks: Hooks;
  /**
   * The app's metrics, tracing and HTTP server: opened at the first step of a start, before the onStartup
   * hooks (so probes answer `starting` from then on), closed at the last step of a stop.
   */
  readonly telemetry: { open(): Promise<void>; close(): Promise<void> };
}

/** Thrown inside a start when `stop()` was called meanwhile: the start unwinds. */
class StartInterrupted extends Error {}

/**
 * An app's lifecycle: one outcome for each call in each state (the table on {@link App}). A start opens
 * {@link StartParts}; a stop, or a start that fails, closes them.
 */
export class Lifecycle {
  state: State = 'new';
  /** What the start under way or the running app opened; undefined before a start and once closed. */
  parts: StartParts | undefined;
  /** The parts of the last start, once closed: what they counted stays readable until the next start. */
  closed: StartParts | undefined;
  private starting: Promise<void> | undefined;
  private stopRequested = false;
  /** True once the start under way (or the running app's) ran its onStartup hooks: afterShutdown's will run. */
  private setUp = false;
  /** True from the first step of a start until the stop (or the start's unwinding) closed the telemetry. */
  private telemetryOpen = false;
  private stopped: Promise<void> | undefined;
  /** Resolves when stop() is first called: run() then stops waiting for a signal. */
  readonly stopCalled: Promise<'stop'>;
  private onStopCalled: () => void = () => {};

  constructor(private readonly host: LifecycleHost) {
    this.stopCalled = new Promise((resolve) => {
      this.onStopCalled = () => resolve('stop');
    });
  }

  /** Starts a new app; rejects `APP_STATE` in any other state. */
  start(): Promise<void> {
    if (this.state !== 'new') {
      const message = `App "${this.host.name}": start() needs a new app, it is ${this.state}${STATE_HINT[this.state]}`;
      return Promise.reject(new SluiceError('APP_STATE', message));
    }
    this.state = 'starting';
    this.stopRequested = false;
    this.starting = held(() => this.bringUp());
    return this.starting;
  }

  /** Stops the app, once: every call after the first gets the first one's promise. */
  stop(): Promise<void> {
    this.onStopCalled();
    this.stopped ??= held(() => this.shutDown());
    return this.stopped;
  }

  /**
   * The start: runs the onStartup hooks, opens the parts, runs the afterStartup hooks; on a failure, or a stop
   * meanwhile, closes what it opened and throws.
   */
  private async bringUp(): Promise<void> {
    const checkpoint = (): void => this.checkpoint();
    const { hooks } = this.host;
    this.setUp = false;
    try {
      this.telemetryOpen = true; // closed again whatever its open did
      await this.host.telemetry.open();
      await hooks.startup('onStartup', () => {}); // a stop meanwhile is seen once they all ran
      this.setUp = true;
      checkpoint();
      this.parts = this.host.makeStartParts();
      await this.parts.open(this.host.mounts(), checkpoint);
      await hooks.startup('afterStartup', checkpoint);
      checkpoint(); // last: nothing awaited between it and running, so a stop() from now on sees the app running
    } catch (error) {
      await this.unwind(error); // throws: the start failed, or a stop interrupted it
    }
    this.state = 'running';
    const subscribers = this.parts?.subscriptions.length ?? 0;
    this.host.log.info('started', { version: this.host.version, subscribers });
  }

  /** Between the steps of a start: throws if stop() was called meanwhile. */
  private checkpoint(): void {
    if (this.stopRequested) throw new StartInterrupted();
  }

  /** A start that failed, or that a stop interrupted: closes what it opened and throws. */
  private async unwind(error: unknown): Promise<never> {
    // What fails to close (or an afterShutdown hook that fails) is logged: the start's own error is the one to report.
    await this.closeParts();
    if (this.setUp) await this.host.hooks.shutdown('afterShutdown', this.host.log);
    if (!this.stopRequested) {
      this.state = 'new';
      throw error;
    }
    this.ended();
    if (error instanceof StartInterrupted)
      throw new SluiceError(
        'APP_STATE',
        `App "${this.host.name}": stop() was called during start(); the app stopped before it ran`,
      );
    throw error;
  }

  /** The stop: by state, nothing to close, the start to interrupt, or the running parts to close. */
  private async shutDown(): Promise<void> {
    if (this.state === 'new') {
      this.state = 'stopped';
      return;
    }
    if (this.state === 'starting') {
      // The start sees it between its steps and unwinds; it closes what it opened and ends stopped.
      this.stopRequested = true;
      await this.starting?.catch(() => {});
      // A start that failed just before (and left the app new) is stopped here.
      if ((this.state as State) === 'new') this.state = 'stopped';
      return;
    }
    this.state = 'stopping';
    const { hooks, log } = this.host;
    const failures: unknown[] = await hooks.shutdown('onShutdown', log);
    failures.push(...(await this.closeParts()));
    failures.push(...(await hooks.shutdown('afterShutdown', log)));
    this.ended();
    // Stopped all the same: what failed (a hook, a part's closing) is reported to the caller.
    if (failures.length > 0) throw failures[0];
  }

  /** Closes what a start opened, the HTTP server last; leaves the app ready for a new start. */
  private async closeParts(): Promise<unknown[]> {
    const failures = (await this.parts?.close()) ?? [];
    this.closed = this.parts;
    this.parts = undefined;
    if (this.telemetryOpen) {
      this.telemetryOpen = false;
      await this.host.telemetry.close().catch((error: unknown) => {
        failures.push(error);
        this.host.log.error('closing: the http server failed', { error });
      });
    }
    return failures;
  }

  /** The app has stopped: says so, and wakes whoever waits for progress (`idle()` resolves). */
  private ended(): void {
    this.state = 'stopped';
    this.host.log.info('stopped');
    this.host.onProgress();
  }
}

const STATE_HINT: Record<State, string> = {
  new: '',
  starting: ' (start() is under way)',
  running: ' (start() was called before)',
  stopping: ' (an App runs once: make a new one)',
  stopped: ' (an App runs once: make a new one)',
};

/** Runs `call` with the process held alive until it settles: the user awaits it. */
export async function held<T>(call: () => Promise<T>): Promise<T> {
  const release = holdProcess();
  try {
    return await call();
  } finally {
    release();
  }
}
