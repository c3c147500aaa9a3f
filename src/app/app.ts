import { SystemClock } from '../core/clock.js';
import { SluiceError, show } from '../core/errors.js';
import { jsonLogger } from '../core/logger.js';
import path from 'node:path';
import type { Broker, Clock, Logger, Store } from '../core/ports.js';
import { compilePace, type CompiledPace } from '../pace/config.js';
import type { PaceReceipt } from '../pace/rules.js';
import { compile, type CompiledSubscriber } from '../spec/compile.js';
import type { SharedOptions } from '../spec/options.js';
import { Router } from '../spec/router.js';
import { validateDefaults } from '../spec/validate.js';
import { fileStore } from '../store/file-store.js';
import type { DeadLetterCounts } from './executor.js';
import { Pacer } from './pacer.js';
import { Subscription } from './subscription.js';

/** Settings of an {@link App}. */
export interface AppOptions {
  /** The app's name: the default consumer group, and the folder of its file store. */
  name: string;
  version?: string;
  /** How long `stop()` lets in-flight deliveries finish before aborting `ctx.signal`. @default 30_000 */
  shutdownTimeoutMs?: number;
  /**
   * Where paced subscribers journal their coordinators. @default `fileStore({ dir: '.sluice/<name>' })` under
   * the working directory, opened only when the app has a paced subscriber
   */
  store?: Store;
  /** @default the system clock */
  clock?: Clock;
  /** @default JSON lines on stderr at `SLUICE_LOG_LEVEL` (default `info`) */
  logger?: Logger;
  /** Defaults for every subscriber of the app (a router's and the subscriber's own settings win). */
  defaults?: SharedOptions;
  /**
   * The most finished-but-uncommittable deliveries per partition (behind one that is still running)
   * before that partition is paused. @default 10_000
   */
  maxUncommitted?: number;
  /** Makes the UUID of each new run ID. @default crypto.randomUUID; tests and the simulator pass a seeded one */
  randomUUID?: () => string;
}

/** The result of `app.send`: the run a paced start joined, or a dropped start. */
export type Receipt = PaceReceipt | { readonly dropped: true };

type State = 'new' | 'starting' | 'running' | 'stopping' | 'stopped';

/**
 * The composition root: brokers with their subscribers, a lifecycle (start, stop, run) and `idle()` for
 * tests. Settings are compiled when `withBroker` is called, so a bad one throws there.
 */
export class App {
  readonly name: string;
  readonly version: string;
  readonly clock: Clock;
  readonly log: Logger;
  private readonly shutdownTimeoutMs: number;
  /** `options.defaults`, checked and frozen at construction. */
  private readonly defaults: Readonly<SharedOptions> | undefined;
  private readonly mounts: { broker: Broker; subscribers: CompiledSubscriber[] }[] = [];
  private readonly names = new Set<string>();
  private readonly paces = new Map<string, CompiledPace>();
  private pacer: Pacer | undefined;
  private subscriptions: Subscription[] = [];
  private state: State = 'new';
  private progressWaiters: (() => void)[] = [];
  private stopped: Promise<void> | undefined;

  constructor(private readonly options: AppOptions) {
    if (options === null || typeof options !== 'object' || typeof options.name !== 'string' || options.name === '') {
      throw new SluiceError('CONFIG_INVALID', `App: name must be a non-empty string, got ${show(options?.name)}`);
    }
    const t = options.shutdownTimeoutMs;
    if (t !== undefined && !(typeof t === 'number' && t >= 0 && Number.isFinite(t))) {
      throw new SluiceError('CONFIG_INVALID', `App "${options.name}": shutdownTimeoutMs must be a finite number >= 0, got ${show(t)}`);
    }
    const m = options.maxUncommitted;
    if (m !== undefined && !(Number.isInteger(m) && m >= 1)) {
      throw new SluiceError('CONFIG_INVALID', `App "${options.name}": maxUncommitted must be a positive integer, got ${show(m)}`);
    }
    this.defaults = options.defaults === undefined ? undefined : validateDefaults(options.defaults, `App "${options.name}" defaults`);
    this.name = options.name;
    this.version = options.version ?? '0.0.0';
    this.shutdownTimeoutMs = t ?? 30_000;
    this.clock = options.clock ?? new SystemClock();
    this.log = (options.logger ?? jsonLogger()).child({ app: this.name });
  }

  /**
   * Mounts subscribers on a broker: `configure` gets a router (no prefix) to `include` into. Every setting
   * is checked here; a bad one throws `SluiceError` naming the subscriber, the field and the value.
   */
  withBroker(broker: Broker, configure: (b: Router) => void): this {
    if (this.state !== 'new') throw new SluiceError('APP_STATE', `App "${this.name}": withBroker must be called before start()`);
    const router = new Router();
    configure(router);
    const subscribers = router.mounted().map((m) => compile(m, { name: this.name, defaults: this.defaults }));
    const reads = new Map(this.mounts.filter((m) => m.broker === broker).flatMap((m) => m.subscribers.map((s) => [`${s.topic}\u0000${s.group}`, s.name])));
    for (const s of subscribers) {
      if (this.names.has(s.name)) throw new SluiceError('CONFIG_INVALID', `App "${this.name}": two subscribers are named ${show(s.name)}; give one a name`);
      this.names.add(s.name);
      const other = reads.get(`${s.topic}\u0000${s.group}`);
      if (other !== undefined) {
        throw new SluiceError('CONFIG_INVALID', `App "${this.name}": subscribers ${show(other)} and ${show(s.name)} both read topic ${show(s.topic)} in group ${show(s.group)} and would split its messages; give one its own group`);
      }
      reads.set(`${s.topic}\u0000${s.group}`, s.name);
      if (s.pace !== undefined) this.paces.set(s.name, compilePace(s.pace, `subscriber "${s.name}"`));
    }
    this.mounts.push({ broker, subscribers });
    return this;
  }

  /** The compiled settings of every subscriber, by name. */
  subscribers(): readonly CompiledSubscriber[] {
    return this.mounts.flatMap((m) => m.subscribers);
  }

  /**
   * What became of each running subscriber's dead letters since `start()`, by name: published whole,
   * published stripped (the broker refused the whole one), lost (refused even stripped), dropped.
   */
  deadLetters(): Readonly<Record<string, Readonly<DeadLetterCounts>>> {
    return Object.fromEntries(this.subscriptions.map((s) => [s.sub.name, { ...s.deadLetters }]));
  }

  /** Connects the brokers and starts every subscription. */
  async start(): Promise<void> {
    if (this.state !== 'new') throw new SluiceError('APP_STATE', `App "${this.name}": start() called twice`);
    this.state = 'starting';
    const settings = {
      clock: this.clock,
      logger: this.log,
      revokeTimeoutMs: this.shutdownTimeoutMs,
      maxUncommitted: this.options.maxUncommitted ?? 10_000,
      onProgress: this.progress,
      pacer: this.paces.size > 0 ? (this.pacer = new Pacer(this.options.store ?? fileStore({ dir: path.resolve('.sluice', this.name) }), this.paces, this.clock, this.log, this.progress, this.options.randomUUID)) : undefined,
    };
    for (const { broker, subscribers } of this.mounts) {
      await broker.connect();
      for (const sub of subscribers) this.subscriptions.push(new Subscription(sub, broker, settings));
    }
    // Subscriptions are attached first: recovered runs that did not finish go to their workers.
    await this.pacer?.open();
    await Promise.all(this.subscriptions.map((s) => s.start()));
    this.state = 'running';
    this.log.info('started', { version: this.version, subscribers: this.subscriptions.length });
  }

  /**
   * Stops gracefully: stop reading; let in-flight deliveries finish within `shutdownTimeoutMs` (then abort
   * `ctx.signal`); commit what finished; close the brokers. Safe to call more than once.
   */
  stop(): Promise<void> {
    this.stopped ??= this.doStop();
    return this.stopped;
  }

  private async doStop(): Promise<void> {
    this.state = 'stopping';
    let timer: { cancel(): void } | undefined;
    const deadline = new Promise<void>((resolve) => (timer = this.clock.setTimer(this.shutdownTimeoutMs, resolve)));
    await Promise.all(this.subscriptions.map((s) => s.stop(deadline)));
    await this.pacer?.close(deadline);
    timer?.cancel();
    await Promise.all(this.mounts.map((m) => m.broker.close()));
    this.state = 'stopped';
    this.log.info('stopped');
    this.progress();
  }

  /** Starts, serves until SIGINT or SIGTERM, then stops gracefully. */
  async run(): Promise<void> {
    await this.start();
    const keepAlive = setInterval(() => {}, 1 << 30);
    await new Promise<void>((resolve) => {
      const onSignal = (signal: NodeJS.Signals): void => {
        this.log.info('signal received, stopping', { signal });
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        resolve();
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
    });
    clearInterval(keepAlive);
    await this.stop();
  }

  /**
   * Resolves once every delivery published so far is settled: nothing in flight (retries waiting on the
   * clock included) and nothing left to read. For tests.
   */
  async idle(): Promise<void> {
    // The system clock's timers do not keep Node alive; while a script awaits idle(), this does.
    const keepAlive = setInterval(() => {}, 1 << 30);
    try {
      await this.waitIdle();
    } finally {
      clearInterval(keepAlive);
    }
  }

  private async waitIdle(): Promise<void> {
    const quiet = (): boolean => this.state === 'stopped' || ((this.pacer?.idle() ?? true) && this.subscriptions.every((s) => s.idle()));
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
   */
  send(name: string, start: { key: string; event: unknown; eventId?: string }): Promise<Receipt> {
    // Not async: the hot path hands back the pacer's own promise, one fewer to resolve per send.
    const { key, event, eventId } = start ?? ({} as typeof start);
    const refused = this.sendRefusal(name, key, eventId);
    return refused ? Promise.reject(refused) : this.pacer!.start(name, { key, event, eventId });
  }

  /** Why `send` cannot take a start, or undefined when it can. */
  private sendRefusal(name: string, key: unknown, eventId: unknown): SluiceError | undefined {
    if (!this.names.has(name)) return new SluiceError('UNKNOWN_SUBSCRIBER', `App "${this.name}": no subscriber is named ${show(name)}`);
    if (!this.paces.has(name)) return new SluiceError('CONFIG_INVALID', `App "${this.name}": subscriber ${show(name)} is not paced; send() starts paced subscribers only`);
    if (this.state !== 'running') return new SluiceError('APP_STATE', `App "${this.name}": send() needs a running app, it is ${this.state}`);
    if (typeof key !== 'string') return new SluiceError('SEND_INVALID', `App "${this.name}": send(${show(name)}): key must be a string, got ${show(key)}`);
    if (eventId !== undefined && (typeof eventId !== 'string' || eventId === '')) {
      return new SluiceError('SEND_INVALID', `App "${this.name}": send(${show(name)}): eventId must be a non-empty string, got ${show(eventId)}`);
    }
    return undefined;
  }


  private readonly progress = (): void => {
    if (this.progressWaiters.length > 0) for (const wake of this.progressWaiters.splice(0)) wake();
  };
}
