import { SystemClock, holdProcess } from '../core/clock.js';
import { SluiceError, show } from '../core/errors.js';
import { jsonLogger, safeLogger } from '../core/logger.js';
import { faultsOf, type Broker, type Clock, type Logger } from '../core/ports.js';
import { compilePace, type CompiledPace } from '../pace/config.js';
import type { Receipt } from '../pace/state.js';
import { compile, type CompiledSubscriber } from '../declare/compile.js';
import type { SharedOptions } from '../declare/options.js';
import { Router } from '../declare/router.js';
import { validateDefaults } from '../declare/validate.js';
import { fileStore } from '../store/file-store.js';
import { checkAppOptions, defaultStoreDir, type AppOptions } from './app-options.js';
import { callingHandlerHost, type DeadLetterCounts } from './executor.js';
import { Pacer } from './pacer.js';
import { Subscription } from './subscription.js';

export type { AppOptions };
export type { Receipt } from '../pace/state.js';

type State = 'new' | 'starting' | 'running' | 'stopping' | 'stopped';

/** Thrown inside `start()` when `stop()` was called meanwhile: the start unwinds. */
class StartInterrupted extends Error {}

/**
 * The composition root: brokers with their subscribers, a lifecycle (start, stop, run) and `idle()` for
 * tests. Settings are checked in the constructor and compiled when `withBroker` is called, so a bad one
 * throws there.
 *
 * The lifecycle gives each call one outcome in each state (an App runs once; a failed start may be retried):
 *
 * | state    | start()                                            | stop()                                          |
 * |----------|----------------------------------------------------|-------------------------------------------------|
 * | new      | starting; resolves once running                    | stopped at once (nothing had started)           |
 * | starting | rejects APP_STATE                                  | the start unwinds after the step under way and closes what it opened; start() rejects APP_STATE; stop() resolves once all is closed: stopped |
 * | running  | rejects APP_STATE                                  | stopping, then stopped                          |
 * | stopping | rejects APP_STATE                                  | the same promise as the first stop()            |
 * | stopped  | rejects APP_STATE (make a new App)                 | resolves                                        |
 *
 * A start that fails closes whatever it had opened (consumers, store, brokers) and leaves the App `new`:
 * start() may be called again. A part that fails to close is logged, the rest are closed, the app ends
 * stopped and stop() rejects with the failure. While `start`, `stop`, `run` or `idle` is awaited, the
 * process stays alive.
 *
 * @example
 * ```ts
 * const app = new App({ name: 'billing', shutdownTimeoutMs: 10_000 })
 *   .withBroker(new MemoryBroker(), (b) => b.include(subscriber('orders', bill).workers(4).build()));
 * await app.start();
 * // ...
 * await app.stop();
 * ```
 *
 * @category App
 */
export class App {
  /** The app's name (`options.name`): the default consumer group, in every log line, and the default store's folder. */
  readonly name: string;
  /** `options.version`, written in the `started` log line. @defaultValue `'0.0.0'` */
  readonly version: string;
  /** The clock every timer of the app runs on: retry backoff, handler timeouts, the shutdown deadline, pace windows. */
  readonly clock: Clock;
  /** The app's logger, with `app: <name>` bound; it never throws into the app, whatever the logger given does. */
  readonly log: Logger;
  private readonly shutdownTimeoutMs: number;
  /** `options.defaults`, checked and frozen at construction. */
  private readonly defaults: Readonly<SharedOptions> | undefined;
  private readonly mounts: { broker: Broker; subscribers: CompiledSubscriber[] }[] = [];
  private readonly names = new Set<string>();
  private readonly paces = new Map<string, CompiledPace>();
  private pacer: Pacer | undefined;
  private subscriptions: Subscription[] = [];
  /** Brokers whose `connect` resolved in this start: the ones to close. */
  private connected: Broker[] = [];
  private state: State = 'new';
  private progressWaiters: (() => void)[] = [];
  private starting: Promise<void> | undefined;
  private stopRequested = false;
  private stopped: Promise<void> | undefined;
  /** Resolves when stop() is first called: run() then stops waiting for a signal. */
  private readonly stopCalled: Promise<'stop'>;
  private onStopCalled: () => void = () => {};

  /**
   * Checks the settings; nothing is connected or opened before {@link App.start}.
   *
   * @param options - the app's name and settings; see {@link AppOptions}.
   * @throws {@link SluiceError} `CONFIG_INVALID` for an unknown setting or a bad value (a `clock`, `store`
   *   or `logger` that is not one), `WORKERS_INVALID` (or `CONFIG_INVALID`) for bad `defaults`.
   */
  constructor(private readonly options: AppOptions) {
    checkAppOptions(options);
    this.stopCalled = new Promise((resolve) => (this.onStopCalled = () => resolve('stop')));
    const t = options.shutdownTimeoutMs;
    this.defaults =
      options.defaults === undefined ? undefined : validateDefaults(options.defaults, `App "${options.name}" defaults`);
    this.name = options.name;
    this.version = options.version ?? '0.0.0';
    this.shutdownTimeoutMs = t ?? 30_000;
    this.clock = options.clock ?? new SystemClock();
    // Whatever a logger does, logging never throws into the app: it logs from where a throw would stop a worker.
    this.log = safeLogger(options.logger ?? jsonLogger()).child({ app: this.name });
  }

  /**
   * Mounts subscribers on a broker: `configure` gets a router (no prefix) to `include` into. Every setting
   * is checked here; a bad one throws `SluiceError` naming the subscriber, the field and the value. Call it
   * once per broker (or again for the same one), before {@link App.start}.
   *
   * @param broker - where the subscribers read and their dead letters go: a {@link MemoryBroker}, a
   *   `KafkaBroker` (from `sluice/kafka`), or any {@link Broker}.
   * @param configure - called at once with a router to `include` specs, builders, decorated classes or
   *   instances, and routers into.
   * @returns the app, to chain.
   * @throws {@link SluiceError} `APP_STATE` after `start()`; `CONFIG_INVALID` for two subscribers with one
   *   name, two subscribers of one topic in one group, bad merged settings or pace, or (for an app with a
   *   paced subscriber and no `store`) a name that is not a plain folder name; `WORKERS_INVALID`,
   *   `PACE_UNKNOWN_PART` and `PACE_BAD_DURATION` as their settings say.
   */
  withBroker(broker: Broker, configure: (b: Router) => void): this {
    if (this.state !== 'new')
      throw new SluiceError('APP_STATE', `App "${this.name}": withBroker must be called before start()`);
    const router = new Router();
    configure(router);
    const subscribers = router.mounted(this.name).map((m) => compile(m, { name: this.name, defaults: this.defaults }));
    const reads = new Map(
      this.mounts
        .filter((m) => m.broker === broker)
        .flatMap((m) => m.subscribers.map((s) => [`${s.topic}\u0000${s.group}`, s.name])),
    );
    for (const s of subscribers) {
      if (this.names.has(s.name))
        throw new SluiceError(
          'CONFIG_INVALID',
          `App "${this.name}": two subscribers are named ${show(s.name)}; give one a name`,
        );
      this.names.add(s.name);
      const other = reads.get(`${s.topic}\u0000${s.group}`);
      if (other !== undefined) {
        throw new SluiceError(
          'CONFIG_INVALID',
          `App "${this.name}": subscribers ${show(other)} and ${show(s.name)} both read topic ${show(s.topic)} in group ${show(s.group)} and would split its messages; give one its own group`,
        );
      }
      reads.set(`${s.topic}\u0000${s.group}`, s.name);
      if (s.pace !== undefined) this.paces.set(s.name, compilePace(s.pace, `subscriber "${s.name}"`));
    }
    if (this.paces.size > 0 && this.options.store === undefined) defaultStoreDir(this.name);
    this.mounts.push({ broker, subscribers });
    return this;
  }

  /**
   * Every mounted subscriber with every setting resolved (its own over its routers' over the app's
   * `defaults` over {@link DEFAULTS}), in the order they were mounted. For checking what a configuration
   * came to.
   */
  subscribers(): readonly CompiledSubscriber[] {
    return this.mounts.flatMap((m) => m.subscribers);
  }

  /**
   * What became of each running subscriber's dead letters since `start()`, by name: published whole,
   * published stripped (the broker refused the whole one), lost (refused even stripped), dropped.
   * Empty before `start()` and after `stop()`.
   */
  deadLetters(): Readonly<Record<string, Readonly<DeadLetterCounts>>> {
    return Object.fromEntries(this.subscriptions.map((s) => [s.sub.name, { ...s.deadLetters }]));
  }

  /**
   * Connects the brokers, opens the store (for paced subscribers) and starts every subscription;
   * resolves once the app is running. A start that fails (or that `stop()` interrupts) closes what it had
   * opened; see the lifecycle table above.
   *
   * @throws {@link SluiceError} `APP_STATE` (as a rejection) unless the app is new, or when `stop()`
   *   interrupted the start; `STORE_CORRUPT` when a shard of the store cannot be recovered;
   *   `TOPIC_MISSING` from `KafkaBroker` for a missing topic; whatever a broker's `connect` rejects with.
   */
  start(): Promise<void> {
    if (this.state !== 'new')
      return Promise.reject(
        new SluiceError(
          'APP_STATE',
          `App "${this.name}": start() needs a new app, it is ${this.state}${STATE_HINT[this.state]}`,
        ),
      );
    this.state = 'starting';
    this.stopRequested = false;
    this.starting = held(() => this.doStart());
    return this.starting;
  }

  private async doStart(): Promise<void> {
    try {
      const pacer =
        this.paces.size > 0
          ? new Pacer(
              this.options.store ?? fileStore({ dir: defaultStoreDir(this.name) }),
              this.paces,
              this.clock,
              this.log,
              this.progress,
              this.options.randomUUID,
              faultsOf(this.options),
            )
          : undefined;
      this.pacer = pacer;
      const settings = {
        clock: this.clock,
        logger: this.log,
        revokeTimeoutMs: this.shutdownTimeoutMs,
        maxUncommitted: this.options.maxUncommitted ?? 10_000,
        onProgress: this.progress,
        pacer,
      };
      for (const { broker, subscribers } of this.mounts) {
        if (!this.connected.includes(broker)) {
          await broker.connect();
          this.connected.push(broker);
          this.interrupted();
        }
        for (const sub of subscribers) this.subscriptions.push(new Subscription(sub, broker, settings));
      }
      // Subscriptions are attached first: recovered runs that did not finish go to their workers.
      await pacer?.open();
      this.interrupted();
      // Every join settles before anything is closed: a consumer that joins after its subscription stopped would never
      // leave.
      const joins = await Promise.allSettled(this.subscriptions.map((s) => s.start()));
      const failed = joins.find((j) => j.status === 'rejected');
      if (failed) throw failed.reason;
      this.interrupted();
    } catch (error) {
      await this.close(); // what fails to close is logged: the start's own error is the one to report
      if (this.stopRequested) {
        this.state = 'stopped';
        this.log.info('stopped');
        this.progress();
        if (error instanceof StartInterrupted)
          throw new SluiceError(
            'APP_STATE',
            `App "${this.name}": stop() was called during start(); the app stopped before it ran`,
          );
      } else this.state = 'new';
      throw error;
    }
    this.state = 'running';
    this.log.info('started', { version: this.version, subscribers: this.subscriptions.length });
  }

  /** Between the steps of a start: throws if stop() was called meanwhile. */
  private interrupted(): void {
    if (this.stopRequested) throw new StartInterrupted();
  }

  /**
   * Stops gracefully: stop reading; let in-flight deliveries finish; commit what finished; close the
   * pace store and the brokers — all within `shutdownTimeoutMs` of the call (at the deadline, handlers
   * still running have `ctx.signal` aborted and what was not committed is delivered again). Safe to call more than
   * once, and at any point
   * of the lifecycle (see the table above). Called by one of the app's handlers before that handler's first
   * `await`, it resolves once the stop has begun. A handler that calls it later must not await it: the stop
   * waits for that handler, until `shutdownTimeoutMs`; it calls `void app.stop()` and returns.
   */
  stop(): Promise<void> {
    this.onStopCalled();
    this.stopped ??= held(() => this.doStop());
    // From a handler of this app (before its first await): the stop waits for that handler, so the handler
    // must not wait for the stop. It is answered once the stop has begun (nothing more is read), returns,
    // its delivery is committed, and the stop goes on.
    const host = callingHandlerHost();
    if (host !== undefined && this.subscriptions.includes(host as Subscription)) return Promise.resolve();
    return this.stopped;
  }

  private async doStop(): Promise<void> {
    if (this.state === 'new') {
      this.state = 'stopped';
      return;
    }
    if (this.state === 'starting') {
      // The start sees it between its steps and unwinds; it closes what it opened and ends stopped.
      this.stopRequested = true;
      await this.starting!.catch(() => {});
      // A start that failed just before (and left the app new) is stopped here.
      if ((this.state as State) === 'new') this.state = 'stopped';
      return;
    }
    this.state = 'stopping';
    const failures = await this.close();
    this.state = 'stopped';
    this.log.info('stopped');
    this.progress();
    // Stopped all the same: what failed to close is reported to the caller.
    if (failures.length > 0) throw failures[0];
  }

  /**
   * Closes what a start opened: the subscriptions, the pace store, the brokers, all within one deadline
   * `shutdownTimeoutMs` away. Leaves the app ready for a new start.
   */
  private async close(): Promise<unknown[]> {
    let timer: { cancel(): void } | undefined;
    // The caller awaits this deadline: it keeps the process alive.
    const deadline = new Promise<void>(
      (resolve) => (timer = this.clock.setTimer(this.shutdownTimeoutMs, resolve, { keepAlive: true })),
    );
    const { subscriptions, pacer, connected } = this;
    // Every part is closed whatever another one does; what failed is logged and returned.
    const failures: unknown[] = [];
    const settle = async (what: string, steps: Promise<unknown>[]): Promise<void> => {
      for (const r of await Promise.allSettled(steps)) {
        if (r.status === 'fulfilled') continue;
        failures.push(r.reason);
        this.log.error(`closing: ${what} failed`, { error: r.reason });
      }
    };
    await settle(
      'a subscription',
      subscriptions.map((s) => s.stop(deadline)),
    );
    await settle('the pace store', pacer ? [pacer.close(deadline)] : []);
    // The brokers' own clients (a producer, an admin) close within what is left of the same deadline; one
    // that cannot reach its broker goes on closing in the background.
    const closing = (b: Broker): Promise<void> =>
      Promise.race([b.close().then(() => true), deadline.then(() => false)]).then((closed) => {
        if (!closed)
          this.log.warn('closing: a broker did not close within the shutdown timeout; it goes on in the background', {
            timeoutMs: this.shutdownTimeoutMs,
          });
      });
    await settle('a broker', connected.map(closing));
    timer?.cancel();
    this.subscriptions = [];
    this.pacer = undefined;
    this.connected = [];
    return failures;
  }

  /**
   * Starts, serves until SIGINT or SIGTERM (or a call of `stop()`), then stops gracefully. The signals are
   * listened for from the first moment: one that arrives while the app is starting stops it there (the
   * start unwinds), and run() resolves once it is stopped.
   */
  async run(): Promise<void> {
    let onSignal: (signal: NodeJS.Signals) => void = () => {};
    const signalled = new Promise<'signal'>((resolve) => {
      onSignal = (signal) => {
        this.log.info('signal received, stopping', { signal });
        resolve('signal');
      };
    });
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    const release = holdProcess();
    try {
      const started = this.start();
      if ((await Promise.race([started.then(() => 'started' as const), signalled, this.stopCalled])) !== 'started') {
        await this.stop();
        await started.catch(() => {}); // it unwound (or had just finished, and the stop stopped it)
        return;
      }
      await Promise.race([signalled, this.stopCalled]);
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      release();
    }
    await this.stop();
  }

  /**
   * Resolves once every delivery published so far is settled: nothing in flight (retries waiting on the
   * clock included) and nothing left to read. For tests. Messages that handlers publish onward count too
   * when a subscriber of this app reads them. For paced subscribers it waits for the records under way and
   * the runs in flight, not for windows still open nor starts waiting for their rate: with a
   * {@link ManualClock}, advance it past them first (and past a retry's backoff), or `idle()` waits for ever.
   */
  idle(): Promise<void> {
    return held(() => this.waitIdle());
  }

  private async waitIdle(): Promise<void> {
    const quiet = (): boolean =>
      this.state === 'stopped' || ((this.pacer?.idle() ?? true) && this.subscriptions.every((s) => s.idle()));
    for (;;) {
      if (quiet()) {
        // Look again after the ready work has run (a settled handler may just have published more),
        // then ask the brokers whether anything is left to read.
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (quiet()) {
          const lags = await Promise.all(this.subscriptions.map((s) => s.lag()));
          if (quiet() && lags.every((l) => l === 0)) return;
          // Something is on its way: wait for progress, or look again shortly (a remote fetch is under way).
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, 20);
            this.progressWaiters.push(() => (clearTimeout(timer), resolve()));
          });
        }
        continue;
      }
      await new Promise<void>((resolve) => this.progressWaiters.push(resolve));
    }
  }

  /**
   * A start of a paced subscriber, for callers without a broker: resolves once the event is durable, with
   * the run it joined (from then on it is part of exactly one run, across any crash). An `eventId` the key
   * has seen within `dedup` gets the first receipt again, with `duplicate: true`, and adds nothing.
   *
   * @param name - the paced subscriber's name.
   * @param start - `key`: the key whose coordinator takes the start; `event`: the payload, a JSON value;
   *   `eventId`: optional, a non-empty string that makes a retried send join once.
   * @returns the {@link Receipt}: `{ kind: 'run', runId, duplicate }`, the run (`<key>@<uuid>`) the event
   *   joined, or `{ kind: 'dropped' }`.
   * @throws {@link SluiceError} (as a rejection) `UNKNOWN_SUBSCRIBER` for an unknown name;
   *   `CONFIG_INVALID` for a subscriber without pace; `APP_STATE` when the app is not running;
   *   `SEND_INVALID` for a key that is not a string or is over {@link MAX_KEY_BYTES}, an empty `eventId`,
   *   an event that is not JSON or whose record is over 64 MiB, or an `order` that throws or is not a
   *   finite number.
   *
   * @example
   * ```ts
   * const receipt = await app.send('reindex', { key: 'row-7', event: { rowId: 'row-7' }, eventId: 'chg-91' });
   * // { kind: 'run', runId: 'row-7@6f1c…', duplicate: false }: durable once this resolves
   * ```
   */
  send(name: string, start: { key: string; event: unknown; eventId?: string }): Promise<Receipt> {
    // Not async: the hot path hands back the pacer's own promise, one fewer to resolve per send.
    const { key, event, eventId } = start ?? ({} as typeof start);
    const refused = this.sendRefusal(name, key, eventId);
    return refused ? Promise.reject(refused) : this.pacer!.append(name, { key, event, eventId });
  }

  /** Why `send` cannot take a start, or undefined when it can. */
  private sendRefusal(name: string, key: unknown, eventId: unknown): SluiceError | undefined {
    if (!this.names.has(name))
      return new SluiceError('UNKNOWN_SUBSCRIBER', `App "${this.name}": no subscriber is named ${show(name)}`);
    if (!this.paces.has(name))
      return new SluiceError(
        'CONFIG_INVALID',
        `App "${this.name}": subscriber ${show(name)} is not paced; send() starts paced subscribers only`,
      );
    if (this.state !== 'running')
      return new SluiceError('APP_STATE', `App "${this.name}": send() needs a running app, it is ${this.state}`);
    if (typeof key !== 'string')
      return new SluiceError(
        'SEND_INVALID',
        `App "${this.name}": send(${show(name)}): key must be a string, got ${show(key)}`,
      );
    if (eventId !== undefined && (typeof eventId !== 'string' || eventId === '')) {
      return new SluiceError(
        'SEND_INVALID',
        `App "${this.name}": send(${show(name)}): eventId must be a non-empty string, got ${show(eventId)}`,
      );
    }
    return undefined;
  }

  private readonly progress = (): void => {
    if (this.progressWaiters.length > 0) for (const wake of this.progressWaiters.splice(0)) wake();
  };
}

const STATE_HINT: Record<State, string> = {
  new: '',
  starting: ' (start() is under way)',
  running: ' (start() was called before)',
  stopping: ' (an App runs once: make a new one)',
  stopped: ' (an App runs once: make a new one)',
};

/** Runs `call` with the process held alive until it settles: the user awaits it. */
async function held<T>(call: () => Promise<T>): Promise<T> {
  const release = holdProcess();
  try {
    return await call();
  } finally {
    release();
  }
}
