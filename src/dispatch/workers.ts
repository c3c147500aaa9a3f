import { Waiters } from '../core/waiters.js';
import { FifoScheduler, type DispatchStrategy, type Keyed, type Scheduler } from './strategy.js';

/** One worker's seat: what it runs now and since when, so that a hung attempt can be found and replaced. */
export class Slot<J> {
  job: J | undefined = undefined;
  /** Counts the attempts started on this slot; a watchdog that sees the same count twice, far apart, found a hang. */
  attempts = 0;
  /** True while the job waits (a dead letter's publish retried) rather than runs. */
  waiting = false;
  /** Set by the runner when the job leaves its worker to wait for a retry's backoff: it is not finished. */
  leavesForRetry = false;
  /** The watchdog's last look: which attempt it saw, and when it first saw it. */
  seenAttempt = -1;
  seenAtMs = 0;
  /** When the attempt now running began, for metrics (set only when the app measures handler durations). */
  startedAtMs = 0;
  /** Set when the worker was given up on (its attempt hung): a replacement took its job and its place. */
  givenUp = false;
}

/**
 * Runs a job's attempt in steps, so that the common case awaits nothing but the handler's own promise (an
 * `async` step of its own per job cost about a fifth of bench/dispatch's rate): `begin` says whether the job
 * runs at all, `call` calls its handler (a thenable it returns is awaited), and then either `returned` or
 * `threw` tells what came of it, returning a promise for whatever remains (a retry's dead letter, say).
 * `returned` and `threw` must not throw.
 */
export interface JobRunner<J> {
  /** Starts an attempt; false when the job is not to run (the runner has let it go). */
  begin(job: J, slot: Slot<J>): boolean;
  call(job: J, slot: Slot<J>): unknown;
  returned(job: J, slot: Slot<J>, value: unknown): Promise<void> | undefined;
  threw(job: J, slot: Slot<J>, error: unknown): Promise<void> | undefined;
}

/** True for a promise, or anything else with a `then`, which `await` waits for. */
function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && typeof value === 'object' && typeof (value as PromiseLike<unknown>).then === 'function';
}

/**
 * n long-lived workers drawing jobs from the strategy's scheduler. Handing a job to a worker allocates
 * nothing beyond the job's place in the queue: an idle worker parks on a promise, a busy one loops.
 */
export class Workers<J extends Keyed> {
  /** Jobs pushed and not yet finished: queued, running, or waiting to retry. */
  inFlight = 0;
  /** Of those, jobs waiting for a retry's backoff: on no worker, their key still held. */
  waitingRetry = 0;
  readonly slots: Slot<J>[];
  private readonly scheduler: Scheduler<J>;
  /** Jobs back from a retry's backoff: they go before anything new (their key is still theirs). */
  private readonly again = new FifoScheduler<J>();
  private readonly sleepers: (() => void)[] = [];
  private closed = false;
  /** Woken when the last job in flight finished. */
  private readonly emptied = new Waiters();

  constructor(
    readonly strategy: DispatchStrategy,
    private readonly runner: JobRunner<J>,
    /** Called after each job finished, with the worker free again. */
    private readonly onDone: () => void,
  ) {
    this.scheduler = strategy.scheduler<J>();
    this.slots = Array.from({ length: strategy.workers }, () => new Slot<J>());
    for (const slot of this.slots) void this.loop(slot, undefined);
  }

  /**
   * Free places: the strategy's worker count less what is in flight, not counting jobs waiting for a
   * retry's backoff (they hold no worker; the partition's watermark bounds how many there may be).
   */
  room(): number {
    return this.strategy.workers - this.inFlight + this.waitingRetry;
  }

  push(job: J): void {
    this.inFlight++;
    if (!this.scheduler.push(job)) return; // waits behind its key
    const wake = this.sleepers.pop();
    if (wake) wake();
  }

  /** A job that waited for its retry's backoff may run again: it goes before anything queued. */
  back(job: J): void {
    this.waitingRetry--;
    this.again.push(job);
    const wake = this.sleepers.pop();
    if (wake) wake();
  }

  /** A job that waited for its retry's backoff will not run again here (a stop, a revoke): it is finished. */
  drop(job: J): void {
    this.waitingRetry--;
    this.finishJob(job); // may free a job of its key, and no worker is on its way to look: wake one
    const wake = this.sleepers.pop();
    if (wake) wake();
  }

  /**
   * Gives up on a slot whose attempt hangs: the old worker will exit whenever its handler settles, and a
   * new worker takes its place, first running `resume` (the job's retry or dead letter).
   */
  replace(slot: Slot<J>, resume: (slot: Slot<J>) => Promise<void> | void): void {
    if (slot.givenUp) return;
    slot.givenUp = true;
    const fresh = new Slot<J>();
    fresh.job = slot.job;
    fresh.startedAtMs = slot.startedAtMs;
    this.slots[this.slots.indexOf(slot)] = fresh;
    void this.loop(fresh, resume);
  }

  /** Resolves once nothing is in flight. */
  drained(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return this.emptied.next();
  }

  /** Lets idle workers exit; jobs already queued still run. */
  close(): void {
    this.closed = true;
    for (const wake of this.sleepers.splice(0)) wake();
  }

  private async loop(slot: Slot<J>, resume: ((slot: Slot<J>) => Promise<void> | void) | undefined): Promise<void> {
    if (resume) {
      await resume(slot);
      if (slot.givenUp) return;
      this.freeSlot(slot);
    }
    for (;;) {
      const job = this.again.next() ?? this.scheduler.next();
      if (job === undefined) {
        if (this.closed) return;
        await new Promise<void>((wake) => this.sleepers.push(wake));
        continue;
      }
      slot.job = job;
      let remaining: Promise<void> | undefined = undefined;
      if (this.runner.begin(job, slot)) {
        try {
          const called = this.runner.call(job, slot);
          const value = isThenable(called) ? await called : called;
          if (slot.givenUp) return; // its attempt timed out: a replacement carries the job on
          remaining = this.runner.returned(job, slot, value);
        } catch (error) {
          if (slot.givenUp) return;
          remaining = this.runner.threw(job, slot, error);
        }
      }
      if (remaining !== undefined) await remaining;
      if (slot.givenUp) return;
      this.freeSlot(slot);
    }
  }

  /** The slot's job is finished, or went away to wait for its retry's backoff: the worker is free. */
  private freeSlot(slot: Slot<J>): void {
    const job = slot.job!;
    slot.job = undefined;
    if (!slot.leavesForRetry) return this.finishJob(job);
    slot.leavesForRetry = false;
    this.waitingRetry++;
    this.onDone(); // its place is free: read again
  }

  private finishJob(job: J): void {
    this.scheduler.done(job); // what it freed, this worker takes next
    this.inFlight--;
    this.onDone();
    if (this.inFlight === 0) this.emptied.wake();
  }
}
