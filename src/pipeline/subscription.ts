import { deadlineIn, within } from '../core/deadline.js';
import { SluiceError, show } from '../core/errors.js';
import type { InboundMessage } from '../core/message.js';
import type { Middleware, PublishMiddleware } from '../core/middleware.js';
import type { Broker, Clock, Consumer, Logger } from '../core/ports.js';
import { ranked } from '../dispatch/ranked.js';
import { lanes, pool, type DispatchStrategy } from '../dispatch/strategy.js';
import { Workers, type Slot } from '../dispatch/workers.js';
import type { CompiledSubscriber } from '../declare/compile.js';
import type { ContextPort } from './handler-context.js';
import { DeadLetters, type DeadLetterCounts } from './dead-letters.js';
import { Executor, timedOut, type Outcome } from './executor.js';
import { Intake } from './intake.js';
import { publishersOf, type PublishFrom } from './middlewares.js';
import { Ledger } from './ledger.js';
import {
  attemptEnded,
  TimedRunner,
  type AppTracer,
  type AttemptEnded,
  type PipelineObserver,
} from './delivery-events.js';
import { Offsets } from './offsets.js';
import { randomUUID } from 'node:crypto';
import type { Pacer } from '../pace-stage/pacer.js';
import { SendRouting } from '../pace-stage/send-routing.js';
import { SubscriptionProbe } from './subscription-probe.js';
import { Watchdog } from './watchdog.js';
import type { Run, Work } from './work.js';
import { HandlerContext } from './handler-context.js';
import { TransactionCommits } from './transaction-commits.js';
import { checkPublishingCluster, checkPublishingStore } from './paced-exactly-once.js';
import type { Publish } from './middlewares.js';

/** Exactly-once: a handler's publishes are held for its transaction; others (none today) go to the broker. */
function stageIn(broker: Broker): Publish {
  return (topic, value, options, context) =>
    context instanceof HandlerContext
      ? context.stage({ topic, value, options })
      : broker.publish(topic, value, options);
}

export { RUN_HEADER } from './handler-context.js';

/** Settings a subscription takes from the app. */
export interface SubscriptionSettings {
  readonly clock: Clock;
  readonly logger: Logger;
  /** How long a revoke waits for the revoked partitions' in-flight work. */
  readonly revokeTimeoutMs: number;
  /** The most delivered-but-uncommittable offsets per partition before that partition is paused. */
  readonly maxUncommitted: number;
  /** Called whenever work was taken or finished, so that `app.idle()` can look again. */
  readonly onProgress: () => void;
  /** The app's pace stage, when it has paced subscribers. */
  readonly pacer?: Pacer;
  /** How long an `app.send` routed to another instance waits for its answer. */
  readonly sendTimeoutMs: number;
  /** The app's middlewares (`app.use`), outside the subscriber's routers' and its own. */
  readonly middlewares: readonly Middleware[];
  /** The app's publish middlewares (`app.usePublish`), around `ctx.publish` and dead letters. */
  readonly publishMiddlewares: readonly PublishMiddleware[];
  /** The app's metrics for one subscriber, when it has metrics: told at the seams (see {@link PipelineObserver}). */
  readonly observe?: ((sub: CompiledSubscriber) => PipelineObserver) | undefined;
  /** The app's tracing, when it has tracing: a span per attempt, the trace context in what it publishes. */
  readonly tracing?: AppTracer | undefined;
}

/**
 * One subscriber running on one broker, as a one-way pipeline:
 *
 *   Intake (read, decode once, key) → Dispatch (workers; one attempt at the handler) → Ledger (outcomes)
 *
 * Two seams: every `Work` passes `dispatch` on its way from Intake to the workers, and every `Outcome` passes
 * `record` on its way from the Executor to the Ledger. Nothing flows back but a freed worker's call to read
 * again. Middlewares wrap each attempt inside the Executor (composed once, here: the app's, the routers', the
 * subscriber's), and publish middlewares each publish (`ctx.publish`, dead letters). Metrics count each
 * outcome at `record` (a {@link PipelineObserver}, when the app has metrics); tracing starts a span around
 * each attempt (`ExecutorHost.around`), ends it at `record`, and writes the trace context into what is
 * published by a publish middleware of its own.
 */
export class Subscription {
  readonly log: Logger;
  stopping = false;
  private readonly stopController = new AbortController();
  /** The stop, for paced runs waiting to start (see `mayStart`). */
  private readonly stopSignal = {
    stopping: (): boolean => this.stopping,
    stopped: new Promise<void>((resolve) => this.stopController.signal.addEventListener('abort', () => resolve())),
  };
  private readonly shutdownController = new AbortController();
  private readonly workers: Workers<Work>;
  private readonly executor: Executor;
  private readonly deadLetterSender: DeadLetters;
  private readonly offsets: Offsets;
  private readonly ledger: Ledger;
  private readonly intake: Intake;
  private readonly watchdog: Watchdog;
  private consumer: Consumer | undefined;
  private readonly pacer: Pacer | undefined;
  /** `app.send` from any instance, under a store owned by partition that routes it (see `Store.routes`). */
  routing: SendRouting | undefined;
  /** Reads the subscription's state for metrics and health, when they ask. */
  readonly probe: SubscriptionProbe;
  /** What the `record` seam tells metrics and tracing, if the app has either. */
  private readonly ended: AttemptEnded | undefined;
  /** Told of what reaches no handler (dropped by pace, on the instance that owns the key), when the app has metrics. */
  private readonly observer: PipelineObserver | undefined;
  /** An `exactlyOnce` subscriber's transactions: its publishes commit with its offsets. */
  private readonly transactions: TransactionCommits | undefined;

  constructor(
    readonly sub: CompiledSubscriber,
    private readonly broker: Broker,
    private readonly settings: SubscriptionSettings,
  ) {
    const clock = settings.clock;
    const log = settings.logger.child({ subscriber: sub.name, topic: sub.topic });
    this.log = log;
    const pacer = sub.pace !== undefined ? settings.pacer : undefined;
    const stopping = (): boolean => this.stopping;
    const pump = (): void => this.intake.pump();
    const record = this.record;
    const mayStart = (work: Run): boolean | Promise<boolean> => this.mayStart(work);
    const tracing = settings.tracing;
    const traced = tracing?.of(sub, broker.kind);
    // Tracing's publish middleware is the outermost: the ones added with app.usePublish see its headers.
    const own = settings.publishMiddlewares;
    // Paced, a run's publishes go with its done record; else a delivery's with its offset, in a transaction.
    if (sub.exactlyOnce && pacer !== undefined) checkPublishingStore(sub, pacer);
    const transactions = sub.exactlyOnce && !pacer ? this.transactionsOf(sub, broker, clock, log) : undefined;
    this.transactions = transactions;
    const staging = sub.exactlyOnce ? stageIn(broker) : undefined;
    const { publish, deadLetter } = publishersOf(tracing ? [tracing.publish, ...own] : own, broker, sub.name, staging);
    const middlewares = [...settings.middlewares, ...sub.middlewares];
    const port = this.port(publish);
    const host = { stopping, owner: this, port, record, mayStart, middlewares, around: traced?.around };
    this.executor = new Executor(sub, host, log);
    const observer = settings.observe?.(sub);
    this.observer = observer;
    this.ended = attemptEnded(observer, traced, sub.retry.attempts);
    // Attempts are timed only for metrics: without them the workers call the executor itself.
    const runner = observer ? new TimedRunner(this.executor, observer.now) : this.executor;
    const workers = new Workers(this.strategy(pacer), runner, pump); // a freed worker: read again
    this.workers = workers;
    this.deadLetterSender = new DeadLetters(sub, deadLetter, clock, log, this.stopController.signal);
    const offsets = new Offsets({ ...settings, clock, log }, transactions);
    this.offsets = offsets;
    this.watchdog = new Watchdog({
      clock,
      log,
      timeoutMs: sub.timeoutMs,
      workers,
      stopping,
      resume: this.resumeAfterTimeout,
    });
    const watch = (): void => this.watchdog.watch();
    const parts = { sub, clock, log, offsets, workers, pacer, stopping };
    this.ledger = new Ledger({ ...parts, deadLetters: this.deadLetterSender, watch, pump });
    const progress = (): void => this.progress();
    const forward = (key: string, m: InboundMessage, event: unknown) => this.routing?.forward(key, m, event);
    const runJoined = tracing && pacer ? tracing.joined.bind(tracing) : undefined;
    const dispatch = this.dispatch;
    this.intake = new Intake({ ...parts, ledger: this.ledger, dispatch, progress, forward, observer, runJoined });
    const consumer = (): Consumer | undefined => this.consumer;
    this.probe = new SubscriptionProbe({ workers, offsets, intake: this.intake, consumer, clock });
    this.pacer = pacer;
    const unread = async (): Promise<number | undefined> => this.consumer?.lag();
    pacer?.attach(sub.name, this.intake.runArrived, broker.partitionOf?.bind(broker), unread);
  }

  async start(): Promise<void> {
    const owning = this.pacer?.ownedByPartition === true ? this.pacer : undefined;
    // Before joining where the topic exists (so that a store of the wrong size opens no shard), else once joined
    // (the broker may create the topic as it joins).
    const checked = owning !== undefined && (await this.checkPartitions(owning, false));
    const routing = owning && this.routeSends(owning);
    await routing?.checkCluster(); // before anything joins
    if (this.sub.exactlyOnce && this.pacer) await checkPublishingCluster(this.sub, this.broker, this.pacer);
    await routing?.start(); // joined before the app runs: no reply to a send of this instance is missed
    this.consumer = await this.broker.consume({
      topic: this.sub.topic,
      group: this.sub.group,
      onReadable: this.intake.pump,
      onRevoke: (partitions) => this.revoke(partitions, owning),
      ...(owning ? { onAssign: (partitions: readonly number[]) => owning.own(partitions) } : {}),
      ...(this.transactions
        ? { onAssign: (partitions: readonly number[]) => this.transactions!.open(partitions) }
        : {}),
      active: (partition) => this.offsets.active(partition),
      shutdownTimeoutMs: this.settings.revokeTimeoutMs,
      ...(routing ? { requests: routing.requests } : {}),
    });
    this.offsets.connect(this.consumer);
    this.intake.connect(this.consumer);
    this.watchdog.start();
    this.intake.pump();
    if (owning && !checked) await this.checkPartitions(owning, true);
    await routing?.check();
    await owning?.settled(); // the shards of the first assignment are restored: app.send finds them
  }

  /** The routing of `app.send` to the owners of keys' partitions, when the store has the topics for it. */
  private routeSends(pacer: Pacer): SendRouting | undefined {
    const routes = pacer.routes;
    if (routes === undefined) return undefined;
    const { clock, sendTimeoutMs, revokeTimeoutMs, tracing } = this.settings;
    const { name: subscriber, group } = this.sub;
    const broker = this.broker;
    const parts = { subscriber, group, broker, pacer, routes, clock, log: this.log, timeoutMs: sendTimeoutMs };
    const observer = this.observer;
    const settings = { shutdownTimeoutMs: revokeTimeoutMs, uuid: randomUUID, observer, tracing };
    this.routing = new SendRouting({ ...parts, ...settings });
    return this.routing;
  }

  /**
   * Partitions taken away: their deliveries settled and committed (the Ledger), then, under a store owned by
   * partition, their shards handed over, within the revoke timeout.
   */
  private async revoke(partitions: readonly number[], owning: Pacer | undefined): Promise<void> {
    // A run handed out before the revoke does not start while its deliveries settle: by the time the shard is
    // handed over, the group may have given the partition to another instance, which runs it.
    owning?.revoking(partitions);
    await this.ledger.revoke(partitions);
    if (!owning) return;
    const deadline = deadlineIn(this.settings.clock, this.settings.revokeTimeoutMs);
    try {
      await owning.release(partitions, deadline.passed);
    } finally {
      deadline.cancel();
    }
  }

  /**
   * A store owned by partition has a shard per partition of the topic, and the broker says where keys go.
   * Returns false when the topic does not exist yet (and `joined` is false): it is checked once joined.
   */
  private async checkPartitions(pacer: Pacer, joined: boolean): Promise<boolean> {
    const { broker, sub } = this;
    if (broker.partitionOf === undefined || broker.partitionCount === undefined)
      throw new SluiceError(
        'CONFIG_INVALID',
        `subscriber ${show(sub.name)}: a store owned by partition needs a broker that tells a key's partition; ${broker.kind} does not`,
      );
    const count = await broker.partitionCount(sub.topic);
    if (count === 0 && !joined) return false;
    if (count !== pacer.shards)
      throw new SluiceError(
        'CONFIG_INVALID',
        `subscriber ${show(sub.name)}: topic ${show(sub.topic)} has ${count} partitions, got a store of ${pacer.shards} shards (a store owned by partition has one shard per partition)`,
      );
    return true;
  }

  /** What became of this subscriber's dead letters. */
  get deadLetters(): Readonly<DeadLetterCounts> {
    return this.deadLetterSender.counts;
  }

  /** Deliveries (or runs) with the workers: running, queued, or waiting for a retry. */
  get inFlight(): number {
    return this.workers.inFlight;
  }

  /** True when nothing is in flight and nothing fetched waits to be taken. */
  idle(): boolean {
    return !this.busy() && (this.stopping || (this.consumer?.backlog() ?? 0) === 0);
  }

  /** Messages in the broker that this member has not taken yet (0 once stopped). */
  async lag(): Promise<number> {
    return this.stopping || !this.consumer ? 0 : this.consumer.lag();
  }

  /**
   * The seam between Intake and Dispatch: every piece of work passes here on its way to the workers (the
   * watchdog then holds the process while it runs).
   */
  private readonly dispatch = (work: Work): void => {
    this.workers.push(work);
    this.watchdog.watch();
  };

  /** The seam between Dispatch and the Ledger: every attempt's outcome passes here (and to metrics and tracing). */
  private readonly record = (work: Work, slot: Slot<Work>, outcome: Outcome): Promise<void> | undefined => {
    const ended = this.ended;
    if (ended !== undefined) ended(work, slot, outcome);
    return this.ledger.record(work, slot, outcome);
  };

  /** A fresh worker carries on the work of an attempt that hung: it counts as failed. */
  private readonly resumeAfterTimeout = async (work: Work, fresh: Slot<Work>): Promise<void> => {
    await this.record(work, fresh, timedOut(this.sub.timeoutMs));
  };

  /** Work in flight anywhere: queued, running, waiting to retry, being appended or dead-lettered. */
  private busy(): boolean {
    return (
      this.workers.inFlight > 0 || this.intake.appending > 0 || !this.ledger.quiet || this.transactions?.busy() === true
    );
  }

  /** Tells the app when this subscription may have become idle: the only moment `idle()` cares about. */
  private progress(): void {
    if (!this.busy()) this.settings.onProgress();
  }

  /**
   * Under a store owned by partition, a run starts only while the consumer is sure that the group still
   * counts its partition as this member's (`Consumer.inSession`): a member thawed after a stall past its
   * session must not run a window that the partition's new owner runs.
   */
  private mayStart(work: Run): boolean | Promise<boolean> {
    const consumer = this.consumer;
    if (this.pacer?.ownedByPartition !== true || consumer?.inSession === undefined) return true;
    return this.pacer.mayStart(work.run, (p) => consumer.inSession!(p), this.stopSignal);
  }

  /** The transactions of an `exactlyOnce` subscriber; a broker without them is refused. */
  private transactionsOf(sub: CompiledSubscriber, broker: Broker, clock: Clock, log: Logger): TransactionCommits {
    if (broker.transactions === undefined)
      throw new SluiceError(
        'CONFIG_INVALID',
        `subscriber ${show(sub.name)}: exactlyOnce needs a broker with transactions; ${broker.kind} has none`,
      );
    // A delivery whose publish the broker refuses for good is dead-lettered instead, then committed.
    const refused = async (message: InboundMessage, reason: string): Promise<void> => {
      if (!(await this.deadLetterSender.send([{ message, reason }], 1, () => {}, undefined)))
        throw new SluiceError('APP_STATE', `subscriber ${show(sub.name)}: stopped before a dead letter was sent`);
    };
    const progress = (): void => this.progress();
    return new TransactionCommits(broker.transactions(sub.group, sub.topic), clock, log, refused, progress);
  }

  /** What a handler's `ctx` may use of this subscription. */
  private port(publish: PublishFrom): ContextPort {
    return {
      subscriber: this.sub.name,
      attempts: this.sub.retry.attempts,
      log: this.log,
      shutdownSignal: this.shutdownController.signal,
      publish,
    };
  }

  /**
   * A paced subscriber's runs wait for a worker by their order (and turns); a plain one's deliveries in arrival
   * order.
   */
  private strategy(pacer: Pacer | undefined): DispatchStrategy {
    const { sub } = this;
    const pace = pacer?.paceOf(sub.name);
    if (pace !== undefined) return ranked(sub.workers, { byKey: sub.byKey, turns: pace.turns === true });
    return sub.byKey ? lanes(sub.workers) : pool(sub.workers);
  }

  /**
   * Stops: take nothing more, abandon retries that wait for their backoff, let running attempts finish until
   * `deadline` fires (then abort their signal), commit what finished, leave the group.
   */
  async stop(deadline: Promise<void>): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.watchdog.stop();
    this.stopController.abort();
    this.ledger.dropRetries(); // they stay uncommitted
    if (!(await within(Promise.all([this.workers.drained(), this.ledger.sent()]), deadline)))
      await this.abortHandlers();
    this.workers.close();
    await this.offsets.commitAll(deadline);
    await this.consumer?.close(deadline); // which commits: waiting for the broker until the same deadline
    await this.routing?.close(deadline);
  }

  /** Shutdown's time ran out: the handlers still running have their signal aborted. */
  private async abortHandlers(): Promise<void> {
    this.log.warn(
      'shutdown timeout: aborting handlers still running; their deliveries stay uncommitted (a handler that awaits app.stop() after an await waits for itself: it should call void app.stop())',
      { inFlight: this.workers.inFlight },
    );
    this.shutdownController.abort(new Error('shutdown timeout'));
    for (const slot of this.workers.slots) slot.job?.context?.abort(this.shutdownController.signal.reason);
    // A handler that honours the signal ends now; one that does not is left behind.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}
