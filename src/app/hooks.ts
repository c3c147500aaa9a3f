import { SluiceError, reasonOf } from '../core/errors.js';
import type { LifecycleHook } from '../core/middleware.js';
import type { Logger } from '../core/ports.js';

/**
 * The four moments of an app's life that hooks run at:
 * - `onStartup`: at `start()`, before anything but the HTTP server is opened (no broker connected, no store
 *   opened, no consumer);
 * - `afterStartup`: once everything is started, just before `start()` resolves;
 * - `onShutdown`: at `stop()` of a running app, before anything stops (reading, draining);
 * - `afterShutdown`: once everything is closed, before `stop()` resolves; also after a start that failed or was
 *   interrupted past its `onStartup` hooks, so that what they set up is torn down.
 */
export type HookPhase = 'onStartup' | 'afterStartup' | 'onShutdown' | 'afterShutdown';

/** An app's lifecycle hooks, by phase, in the order added. */
export class Hooks {
  private readonly lists: Record<HookPhase, LifecycleHook[]> = {
    onStartup: [],
    afterStartup: [],
    onShutdown: [],
    afterShutdown: [],
  };

  constructor(private readonly app: string) {}

  /** Adds a hook (the app checked it is a function, before `start()`). */
  add(phase: HookPhase, hook: LifecycleHook): void {
    this.lists[phase].push(hook);
  }

  /**
   * Runs a startup phase's hooks one after the other; the first that throws ends it with `STARTUP_HOOK_FAILED`
   * (the later ones do not run). `between` is called after each hook: it throws to interrupt the start.
   */
  async startup(phase: 'onStartup' | 'afterStartup', between: () => void): Promise<void> {
    const hooks = this.lists[phase];
    for (let i = 0; i < hooks.length; i++) {
      try {
        await hooks[i]!();
      } catch (error) {
        throw this.failed('STARTUP_HOOK_FAILED', phase, i, error);
      }
      between();
    }
  }

  /**
   * Runs a shutdown phase's hooks one after the other, each whatever the ones before did; returns the errors
   * (`SHUTDOWN_HOOK_FAILED`) of those that threw, each logged.
   */
  async shutdown(phase: 'onShutdown' | 'afterShutdown', log: Logger): Promise<SluiceError[]> {
    const failures: SluiceError[] = [];
    const hooks = this.lists[phase];
    for (let i = 0; i < hooks.length; i++) {
      try {
        await hooks[i]!();
      } catch (error) {
        const failure = this.failed('SHUTDOWN_HOOK_FAILED', phase, i, error);
        log.error(`stopping: ${phase} hook failed; the stop goes on`, { error: failure });
        failures.push(failure);
      }
    }
    return failures;
  }

  /** `App "x": onStartup hook #2 (connectDb) failed: <its message>`, with the hook's error as the cause. */
  private failed(code: 'STARTUP_HOOK_FAILED' | 'SHUTDOWN_HOOK_FAILED', phase: HookPhase, i: number, error: unknown) {
    const hook = this.lists[phase][i]!;
    const name = `${phase} hook #${i + 1}${hook.name ? ` (${hook.name})` : ''}`;
    return new SluiceError(code, `App "${this.app}": ${name} failed: ${reasonOf(error)}`, { cause: error });
  }
}
