import { SluiceError, show } from '../core/errors.js';
import type { LifecycleHook, Middleware, PublishMiddleware } from '../core/middleware.js';
import { Hooks, type HookPhase } from './hooks.js';

/**
 * What an {@link App} is given before it starts, besides its brokers and subscribers: its middlewares,
 * publish middlewares and lifecycle hooks. Each method refuses anything but a function, and any call after
 * `start()`.
 *
 * @category App
 */
export abstract class AppSettings {
  /** The app's name (`options.name`). */
  abstract readonly name: string;
  /** @internal The middlewares, in the order added. */
  protected readonly middlewares: Middleware[] = [];
  /** @internal The publish middlewares, in the order added. */
  protected readonly publishMiddlewares: PublishMiddleware[] = [];
  /** @internal The lifecycle hooks, made once the name is known. */
  protected abstract readonly hooks: Hooks;
  /** @internal The app's lifecycle state. */
  protected abstract get state(): string;

  /**
   * Adds a middleware around each attempt of every subscriber of the app, outside the routers' and the
   * subscribers' own; the first added is the outermost. See {@link Middleware} for what it sees and may do.
   *
   * @returns the app, to chain.
   * @throws {@link SluiceError} `CONFIG_INVALID` for anything but a function; `APP_STATE` after `start()`.
   */
  use(middleware: Middleware): this {
    this.middlewares.push(this.checked('use', middleware));
    return this;
  }

  /**
   * Adds a publish middleware around every publish of the app's subscribers: `ctx.publish` and dead letters
   * (not `app.send`, which journals an event rather than publishing a message). The first added is the
   * outermost. See {@link PublishMiddleware}.
   *
   * @returns the app, to chain.
   * @throws {@link SluiceError} `CONFIG_INVALID` for anything but a function; `APP_STATE` after `start()`.
   */
  usePublish(middleware: PublishMiddleware): this {
    this.publishMiddlewares.push(this.checked('usePublish', middleware));
    return this;
  }

  /**
   * Adds a hook that `start()` awaits before it opens anything but the HTTP server of `http` (no broker
   * connected, no consumer joined; the probes answer `starting`), after
   * the hooks added before it. One that throws fails the start with `STARTUP_HOOK_FAILED`: nothing was opened,
   * the later hooks do not run, and the app may be started again.
   *
   * @throws {@link SluiceError} `CONFIG_INVALID` for anything but a function; `APP_STATE` after `start()`.
   */
  onStartup(hook: LifecycleHook): this {
    return this.hook('onStartup', hook);
  }

  /**
   * Adds a hook that `start()` awaits once everything is started (every consumer joined), before it resolves.
   * One that throws fails the start with `STARTUP_HOOK_FAILED`, after closing everything it opened.
   *
   * @throws {@link SluiceError} `CONFIG_INVALID` for anything but a function; `APP_STATE` after `start()`.
   */
  afterStartup(hook: LifecycleHook): this {
    return this.hook('afterStartup', hook);
  }

  /**
   * Adds a hook that `stop()` of a running app awaits before it stops anything (reading, draining). One that
   * throws is logged, the stop goes on, and `stop()` rejects with `SHUTDOWN_HOOK_FAILED` once stopped.
   *
   * @throws {@link SluiceError} `CONFIG_INVALID` for anything but a function; `APP_STATE` after `start()`.
   */
  onShutdown(hook: LifecycleHook): this {
    return this.hook('onShutdown', hook);
  }

  /**
   * Adds a hook awaited once everything is closed, before `stop()` resolves; also after a start that failed or
   * was stopped once its `onStartup` hooks had run. One that throws is logged, and `stop()` rejects with
   * `SHUTDOWN_HOOK_FAILED` (a failed start rejects with its own error).
   *
   * @throws {@link SluiceError} `CONFIG_INVALID` for anything but a function; `APP_STATE` after `start()`.
   */
  afterShutdown(hook: LifecycleHook): this {
    return this.hook('afterShutdown', hook);
  }

  private hook(phase: HookPhase, hook: LifecycleHook): this {
    this.hooks.add(phase, this.checked(phase, hook));
    return this;
  }

  private checked<F>(what: string, fn: F): F {
    this.assertNew(what);
    if (typeof fn !== 'function')
      throw new SluiceError('CONFIG_INVALID', `App "${this.name}": ${what} takes a function, got ${show(fn)}`);
    return fn;
  }

  protected assertNew(what: string): void {
    if (this.state !== 'new')
      throw new SluiceError('APP_STATE', `App "${this.name}": ${what} must be called before start()`);
  }
}
