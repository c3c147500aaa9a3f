import { SluiceError } from '../core/errors.js';
import { encodeValue, messageId, type InboundMessage, type PublishOptions } from '../core/message.js';
import type { Broker, Clock, Consumer, Logger, Timer } from '../core/ports.js';
import { ranked } from '../dispatch/ranked.js';
import { lanes, pool } from '../dispatch/strategy.js';
import { Watermark } from '../dispatch/watermark.js';
import { Workers, type Slot } from '../dispatch/workers.js';
import type { PaceRun } from '../pace/rules.js';
import type { CompiledSubscriber } from '../declare/compile.js';
import { Executor, type DeadLetterCounts, type ExecutorHost } from './executor.js';
import { Job } from './job.js';
import type { Pacer } from './pacer.js';

/** Deliveries of a paced subscriber being appended to its coordinators at once, at most. */
const PACE_INTAKE = 1_000;
/** The header a paced run's dead letter carries its run ID in. */
export const RUN_HEADER = 'x-sluice-run-id';

/** A timer due at once: on the next turn, after the worker has let the job go. */
function immediately(fire: () => void): Timer {
  const handle = setImmediate(fire);
  return { cancel: () => clearImmediate(handle) };
}

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
}

/**
 * One subscriber running on one broker: takes messages only while its workers have room, hands them to
 * the dispatch strategy, and keeps each partition's watermark, committing only what has really finished.
 */
export class Subscription implements ExecutorHost {
  readonly clock: Clock;
  readonly log: Logger;
  stopping = false;
  private readonly stopController = new AbortController();
  private readonly shutdownController = new AbortController();
  readonly stopSignal: AbortSignal = this.stopController.signal;
  readonly shutdownSignal: AbortSignal = this.shutdownController.signal;
  private readonly workers: Workers<Job>;
  private readonly executor: Executor;
  private consumer: Consumer | undefined;
  private readonly marks = new Map<number, Watermark>();
  private readonly revokeWaiters: (() => void)[] = [];
  private pumping = false;
  private sweepTimer: Timer | undefined;
  /** The watchdog's timer holds the process while attempts run: only it ends one that hangs. */
  private sweepHeld = false;
  /** Jobs waiting for a retry's backoff, each with the timer that brings it back. */
  private readonly backoffs = new Map<Job, Timer>();
  /** For a paced subscriber: its pace stage, deliveries being appended, and the never-revoked marks of runs. */
  private readonly pacer: Pacer | undefined;
  private appending = 0;
  private readonly runMarks = new Watermark(-1, 0);

  constructor(
    readonly sub: CompiledSubscriber,
    private readonly broker: Broker,
    private readonly settings: SubscriptionSettings,
  ) {
    this.clock = settings.clock;
    this.log = settings.logger.child({ subscriber: sub.name, topic: sub.topic });
    this.executor = new Executor(sub, this, this.log);
    // A paced subscriber's runs wait for a worker by their order (and turns); a plain one's deliveries in arrival
    // order.
    const pace = sub.pace !== undefined ? settings.pacer?.paceOf(sub.name) : undefined;
    const strategy =
      pace !== undefined
        ? ranked(sub.workers, { byKey: sub.byKey, turns: pace.turns === true })
        : sub.byKey
          ? lanes(sub.workers)
          : pool(sub.workers);
    this.workers = new Workers(strategy, this.executor, this.pump); // a finished job frees room: read again
    if (sub.pace !== undefined) {
      this.pacer = settings.pacer;
      this.pacer?.attach(sub.name, this.runArrived);
    }
  }

  async start(): Promise<void> {
    this.consumer = await this.broker.consume({
      topic: this.sub.topic,
      group: this.sub.group,
      onReadable: this.pump,
      onRevoke: (partitions) => this.revoke(partitions),
      active: (partition) => {
        const marks = this.marks.get(partition);
        return marks === undefined ? 0 : marks.outstanding - marks.away;
      },
      shutdownTimeoutMs: this.settings.revokeTimeoutMs,
    });
    this.scheduleSweep();
    this.pump();
  }

  /** What became of this subscriber's dead letters. */
  get deadLetters(): Readonly<DeadLetterCounts> {
    return this.executor.counts;
  }

  /** True when nothing is in flight and nothing fetched waits to be taken. */
  idle(): boolean {
    return (
      this.workers.inFlight === 0 && this.appending === 0 && (this.stopping || (this.consumer?.backlog() ?? 0) === 0)
    );
  }

  /** Messages in the broker that this member has not taken yet (0 once stopped). */
  async lag(): Promise<number> {
    return this.stopping || !this.consumer ? 0 : this.consumer.lag();
  }

  publish(topic: string, value: unknown, options?: PublishOptions): Promise<void> {
    return this.broker.publish(topic, value, options);
  }

  /** Takes as much as the workers have room for. Called on readable, and whenever a job finishes. */
  readonly pump = (): void => {
    const consumer = this.consumer;
    if (this.pumping || this.stopping || !consumer) return this.progress();
    this.pumping = true;
    try {
      const batchMax = this.sub.batchMax;
      if (this.pacer) this.intake(consumer, this.pacer);
      else
        for (let room = this.workers.room(); room > 0; room = this.workers.room()) {
          const taken = consumer.take(batchMax === undefined ? room : batchMax);
          if (taken.length === 0) break;
          if (batchMax === undefined) for (const m of taken) this.dispatch(m);
          else this.dispatchBatch(taken);
        }
    } finally {
      this.pumping = false;
    }
    this.progress();
  };

  /** Tells the app when this subscription may have become idle: the only moment `idle()` cares about. */
  private progress(): void {
    if (this.workers.inFlight === 0 && this.appending === 0) this.settings.onProgress();
  }

  /**
   * A paced subscriber's reading: each delivery becomes an event of its key's coordinator, and is settled
   * (its offset committable) once that event is durable. At most PACE_INTAKE appends are under way.
   */
  private intake(consumer: Consumer, pacer: Pacer): void {
    for (let room = PACE_INTAKE - this.appending; room > 0; room = PACE_INTAKE - this.appending) {
      const taken = consumer.take(room);
      if (taken.length === 0) break;
      for (const m of taken) this.paceDelivery(m, pacer);
    }
  }

  private paceDelivery(m: InboundMessage, pacer: Pacer): void {
    const marks = this.track(m);
    const job = new Job(this, m, marks);
    job.key = this.keyOf(job);
    if (!job.decoded) {
      job.undecodable = this.executor.decode(job);
      job.decoded = true;
    }
    if (job.undecodable !== undefined) return this.push(job); // the executor dead-letters it
    this.appending++;
    pacer.append(this.sub.name, { key: job.key ?? '', event: job.payload, source: m }).then(
      () => {
        this.appending--;
        this.complete(marks, m.offset);
        this.pump();
      },
      (error: unknown) => {
        this.appending--;
        if (error instanceof SluiceError && error.code === 'SEND_INVALID') {
          // Not JSON, a key or event past pace's limits, an order that is not a number: it never will be. Its offset is
          // committed.
          job.undecodable = [[m, `DECODE_FAILED: the delivery cannot be journaled for pace: ${error.message}`]];
          return this.push(job); // the executor dead-letters it
        }
        this.log.error('pace: the event was not recorded; its delivery stays uncommitted', { id: messageId(m), error });
        this.abandon(job);
        this.pump();
      },
    );
  }

  /** A paced run whose window closed: to the workers, by its key under lanes. */
  readonly runArrived = (run: PaceRun): void => {
    if (this.stopping) return; // it is recorded as started: it runs again after the restart
    // A batch run gets its events; a debounced run, or a start that is a run by itself, its one event.
    const payload = this.pacer!.paceOf(this.sub.name)?.kind === 'batch' ? run.events : run.events[0];
    // The run as a message: its bytes are needed only by a dead letter, so they are made on first read.
    let bytes: Buffer | undefined;
    const m: InboundMessage = {
      topic: this.sub.topic,
      partition: -1,
      offset: -1,
      key: run.key,
      headers: { [RUN_HEADER]: run.id },
      get value() {
        return (bytes ??= encodeValue(payload));
      },
      timestamp: this.clock.now(),
    };
    const job = new Job(this, m, this.runMarks, undefined, undefined, run);
    job.payload = payload;
    job.decoded = true;
    job.order = run.order;
    // Keyed for turns and lanes (a pool without turns ignores the key).
    job.key = run.key;
    this.push(job);
  };

  private dispatch(m: InboundMessage): void {
    const marks = this.track(m);
    const job = new Job(this, m, marks);
    if (this.sub.byKey) job.key = this.keyOf(job);
    this.push(job);
  }

  private dispatchBatch(messages: readonly InboundMessage[]): void {
    const batchMarks = messages.map((m) => this.track(m));
    this.push(new Job(this, messages[0]!, batchMarks[0]!, messages, batchMarks));
  }

  /** To the workers; the watchdog then holds the process (see `watch`). */
  private push(job: Job): void {
    this.workers.push(job);
    this.watch();
  }

  private track(m: InboundMessage): Watermark {
    let marks = this.marks.get(m.partition);
    if (!marks) this.marks.set(m.partition, (marks = new Watermark(m.partition, m.offset)));
    marks.delivered(m.offset);
    if (!marks.paused && marks.window() >= this.settings.maxUncommitted) {
      marks.paused = true;
      this.consumer!.pause(m.partition);
    }
    return marks;
  }

  private keyOf(job: Job): string | undefined {
    const keyFn = this.sub.key;
    if (!keyFn) return job.delivery.key;
    try {
      // The key function reads the decoded value: decode once here, the executor reuses it.
      job.undecodable = this.executor.decode(job);
      job.decoded = true;
      if (job.undecodable !== undefined) return job.delivery.key;
      const key: unknown = keyFn({
        value: job.payload,
        key: job.delivery.key,
        headers: job.delivery.headers,
        topic: job.delivery.topic,
      });
      if (typeof key === 'string' || key === undefined || key === null) return key ?? undefined;
      if (typeof key === 'number' || typeof key === 'bigint' || typeof key === 'boolean') return String(key);
      throw new TypeError(`the key must be a string, got ${typeof key}`);
    } catch (error) {
      this.log.warn('key function threw (or gave no string); the message key is used instead', { error });
      return job.delivery.key;
    }
  }

  settle(job: Job): void {
    if (job.paced) return this.finishRun(job.paced);
    if (!job.batch) return this.complete(job.marks, job.delivery.offset);
    job.batch.forEach((m, i) => this.complete(job.batchMarks![i]!, m.offset));
  }

  abandon(job: Job): void {
    if (job.paced) return; // recorded as started and not done: it runs again after a restart
    for (const marks of job.batchMarks ?? [job.marks]) {
      marks.abandon();
      if (marks.revoked) this.wakeRevoke();
      else this.settledIfQuiet(marks);
    }
  }

  retryLater(job: Job, slot: Slot<Job>, delayMs: number): void {
    slot.away = true;
    for (const marks of job.batchMarks ?? [job.marks]) {
      marks.away++;
      this.settledIfQuiet(marks);
    }
    const due = (): void => {
      this.backoffs.delete(job);
      if (this.stopping || job.revoked()) return this.dropRetry(job);
      for (const marks of job.batchMarks ?? [job.marks]) marks.away--;
      job.attempt++;
      this.workers.back(job);
      this.watch();
    };
    // The delivery waits for this timer: it keeps the process alive.
    this.backoffs.set(job, delayMs > 0 ? this.clock.setTimer(delayMs, due, { keepAlive: true }) : immediately(due));
  }

  /** A job waiting for its retry's backoff will not run again here: it stays uncommitted. */
  private dropRetry(job: Job): void {
    this.backoffs.get(job)?.cancel();
    this.backoffs.delete(job);
    for (const marks of job.batchMarks ?? [job.marks]) marks.away--;
    this.abandon(job);
    this.workers.drop(job);
  }

  /** A run ended (handled, or dead-lettered): record it, so that it never runs again. */
  private finishRun(run: PaceRun): void {
    this.pacer!.done(run).catch((error: unknown) =>
      this.log.error('pace: a finished run was not recorded; it may run again after a restart', {
        runId: run.id,
        error,
      }),
    );
  }

  /** Tells the consumer when nothing of the partition runs or waits for a worker any more. */
  private settledIfQuiet(marks: Watermark): void {
    if (marks.outstanding === marks.away && marks.partition >= 0) this.consumer?.settled?.(marks.partition);
  }

  private complete(marks: Watermark, offset: number): void {
    const moved = marks.complete(offset);
    if (marks.revoked) return this.wakeRevoke();
    this.settledIfQuiet(marks);
    if (!moved) return;
    const consumer = this.consumer!;
    consumer.commit(marks.partition, marks.watermark());
    if (marks.paused && marks.window() < this.settings.maxUncommitted) {
      marks.paused = false;
      consumer.resume(marks.partition);
    }
  }

  /** Partitions taken away: stop dispatching them, wait for their in-flight work (bounded), commit. */
  private async revoke(partitions: readonly number[]): Promise<void> {
    const revoked: Watermark[] = [];
    for (const p of partitions) {
      const marks = this.marks.get(p);
      if (!marks) continue;
      marks.revoked = true;
      this.marks.delete(p);
      revoked.push(marks);
    }
    // Retries waiting for their backoff would count nowhere now: the next owner gets them again.
    for (const job of [...this.backoffs.keys()]) if (job.revoked()) this.dropRetry(job);
    const busy = (): boolean => revoked.some((m) => m.outstanding > 0);
    if (busy()) {
      let timedOut = false;
      // A rebalance (another member's join, or a stop) waits for this: it keeps the process alive.
      const timer = this.clock.setTimer(
        this.settings.revokeTimeoutMs,
        () => {
          timedOut = true;
          this.wakeRevoke();
        },
        { keepAlive: true },
      );
      while (busy() && !timedOut) await new Promise<void>((resolve) => this.revokeWaiters.push(resolve));
      timer.cancel();
      if (timedOut)
        this.log.warn('revoke: in-flight work did not finish in time; it will be delivered again', { partitions });
    }
    for (const marks of revoked) this.consumer?.commit(marks.partition, marks.watermark());
    await this.consumer?.flush();
  }

  private wakeRevoke(): void {
    for (const wake of this.revokeWaiters.splice(0)) wake();
  }

  /**
   * The watchdog: every timeoutMs / 4 it looks at each worker; an attempt it finds still running
   * `timeoutMs` after it first saw it has hung (so a timeout fires between 1 and 1.25 × timeoutMs). It aborts
   * the attempt's signal and lets a fresh worker carry the job on. Reading no clock per delivery keeps the
   * hot path cheap.
   */
  private scheduleSweep(): void {
    const every = Math.max(1, Math.min(1000, Math.ceil(this.sub.timeoutMs / 4)));
    // While an attempt runs, the watchdog holds the process (a hung one must still time out); idle, it does not.
    this.sweepHeld = this.workers.inFlight > 0;
    this.sweepTimer = this.clock.setTimer(
      every,
      () => {
        if (this.stopping) return;
        const now = this.clock.now();
        for (const slot of this.workers.slots) {
          const job = slot.job;
          if (!job || slot.waiting) continue;
          if (slot.seenAttempt !== slot.attempts) {
            slot.seenAttempt = slot.attempts;
            slot.seenAtMs = now;
            continue;
          }
          if (now - slot.seenAtMs < this.sub.timeoutMs) continue;
          this.log.warn('handler timed out; its attempt counts as failed', {
            id: messageId(job.delivery),
            timeoutMs: this.sub.timeoutMs,
          });
          job.abort(new Error(`handler timed out after ${this.sub.timeoutMs} ms`));
          this.workers.replace(slot, (fresh) => this.executor.resumeAfterTimeout(job, fresh));
        }
        this.scheduleSweep();
      },
      { keepAlive: this.sweepHeld },
    );
  }

  /** Work went to the workers: a watchdog timer that does not hold the process is set again, holding it. */
  private watch(): void {
    if (this.sweepHeld || this.stopping || this.sweepTimer === undefined) return;
    this.sweepTimer.cancel();
    this.scheduleSweep();
  }

  /**
   * Stops: take nothing more, abandon retries that wait for their backoff, let running attempts finish until `deadline`
   * fires (then abort their signal), commit what finished, leave the group.
   */
  async stop(deadline: Promise<void>): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.sweepTimer?.cancel();
    this.stopController.abort();
    for (const job of [...this.backoffs.keys()]) this.dropRetry(job); // they stay uncommitted
    const finished = await Promise.race([this.workers.drained().then(() => true), deadline.then(() => false)]);
    if (!finished) {
      this.log.warn(
        'shutdown timeout: aborting handlers still running; their deliveries stay uncommitted (a handler that awaits app.stop() after an await waits for itself: it should call void app.stop())',
        { inFlight: this.workers.inFlight },
      );
      this.shutdownController.abort(new Error('shutdown timeout'));
      for (const slot of this.workers.slots) slot.job?.abort(this.shutdownSignal.reason);
      // A handler that honours the signal ends now; one that does not is left behind.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    this.workers.close();
    for (const marks of this.marks.values()) {
      marks.revoked = true;
      this.consumer?.commit(marks.partition, marks.watermark());
    }
    this.marks.clear();
    await this.consumer?.close(deadline); // which commits: waiting for the broker until the same deadline
  }
}
